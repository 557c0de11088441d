package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
)

// Digest is "sha256:" and the hex SHA-256 of data's canonical JSON: object keys sorted
// by their bytes (the last of duplicate keys kept), no insignificant whitespace, numbers
// written as the shortest form of their float64 value, as JavaScript would see them. The
// same value written differently has the same digest. Data that is not exactly one JSON
// value is digested as it is.
func Digest(data []byte) string {
	b := data
	if v, err := parseJSON(data); err == nil {
		b = appendCanonical(nil, v)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func appendCanonical(buf []byte, v *value) []byte {
	switch v.kind {
	case kindNumber:
		f, err := strconv.ParseFloat(string(v.num), 64)
		if err != nil {
			return append(buf, v.num...) // beyond float64: keep the text
		}
		if f == 0 {
			f = 0 // -0 and 0 are one value
		}
		out, _ := json.Marshal(f) // finite, so it marshals
		return append(buf, out...)
	case kindArray:
		buf = append(buf, '[')
		for i, el := range v.arr {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendCanonical(buf, el)
		}
		return append(buf, ']')
	case kindObject:
		last := map[string]*value{}
		keys := make([]string, 0, len(v.obj))
		for _, m := range v.obj {
			if _, dup := last[m.key]; !dup {
				keys = append(keys, m.key)
			}
			last[m.key] = m.val
		}
		slices.Sort(keys)
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, k)
			buf = append(buf, ':')
			buf = appendCanonical(buf, last[k])
		}
		return append(buf, '}')
	default:
		return appendJSON(buf, v)
	}
}
