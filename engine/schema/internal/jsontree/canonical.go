package jsontree

import (
	"encoding/json"
	"slices"
	"strconv"
)

// AppendCanonical writes v's canonical JSON, which a schema's digest is taken of: object keys
// sorted by their bytes (the last of duplicate keys kept), no insignificant whitespace,
// numbers written as the shortest form of their float64 value, as JavaScript would see
// them. The same value written differently has the same canonical form.
func AppendCanonical(buf []byte, v *Value) []byte {
	switch v.Kind {
	case KindNumber:
		f, err := strconv.ParseFloat(string(v.Num), 64)
		if err != nil {
			return append(buf, v.Num...) // beyond float64: keep the text
		}
		if f == 0 {
			f = 0 // -0 and 0 are one value
		}
		out, _ := json.Marshal(f) // finite, so it marshals
		return append(buf, out...)
	case KindArray:
		buf = append(buf, '[')
		for i, el := range v.Arr {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = AppendCanonical(buf, el)
		}
		return append(buf, ']')
	case KindObject:
		last := map[string]*Value{}
		keys := make([]string, 0, len(v.Obj))
		for _, m := range v.Obj {
			if _, dup := last[m.Key]; !dup {
				keys = append(keys, m.Key)
			}
			last[m.Key] = m.Val
		}
		slices.Sort(keys)
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = AppendString(buf, k)
			buf = append(buf, ':')
			buf = AppendCanonical(buf, last[k])
		}
		return append(buf, '}')
	default:
		return AppendJSON(buf, v)
	}
}
