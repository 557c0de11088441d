// Package sourcemap is the source map esbuild writes for a TypeScript or ESM module, made to
// read in goja as the original file does (its columns shifted by one) and inlined in the
// compiled code.
package sourcemap

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
)

// Fix shifts every generated and every original column of a
// source map by one.
//
// goja looks a position up with a 1-based generated column and reports the
// mapped column as stored, while source maps are 0-based on both sides.
// Unfixed, a lookup can land on the segment that starts one character later
// and every reported column is one short of goja's own 1-based columns.
// Shifting both sides makes positions in source-mapped programs read exactly
// as they would in the original file.
//
// Generated columns are relative within a line, so only the first segment
// of each line changes; original columns are relative across the whole
// map, so only the first segment that has one changes.
func Fix(raw []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	var mappings string
	if err := json.Unmarshal(m["mappings"], &mappings); err != nil {
		return nil, err
	}
	lines := strings.Split(mappings, ";")
	srcShifted := false
	for i, line := range lines {
		if line == "" {
			continue
		}
		segs := strings.Split(line, ",")
		fields, err := decodeVLQ(segs[0])
		if err != nil {
			return nil, err
		}
		fields[0]++
		if !srcShifted && len(fields) >= 4 {
			fields[3]++
			srcShifted = true
		}
		segs[0] = encodeVLQ(fields)
		if !srcShifted {
			// The first segment carrying an original position may come later
			// on the line.
			for j := 1; j < len(segs) && !srcShifted; j++ {
				f, err := decodeVLQ(segs[j])
				if err != nil {
					return nil, err
				}
				if len(f) >= 4 {
					f[3]++
					segs[j] = encodeVLQ(f)
					srcShifted = true
				}
			}
		}
		lines[i] = strings.Join(segs, ",")
	}
	b, err := json.Marshal(strings.Join(lines, ";"))
	if err != nil {
		return nil, err
	}
	m["mappings"] = b
	return json.Marshal(m)
}

const vlqChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

var errVLQ = errors.New("loader: malformed source map segment")

func decodeVLQ(seg string) ([]int, error) {
	var out []int
	value, shift := 0, 0
	for i := 0; i < len(seg); i++ {
		d := strings.IndexByte(vlqChars, seg[i])
		if d < 0 {
			return nil, errVLQ
		}
		value += (d & 31) << shift
		if d&32 != 0 {
			shift += 5
			continue
		}
		if value&1 != 0 {
			out = append(out, -(value >> 1))
		} else {
			out = append(out, value>>1)
		}
		value, shift = 0, 0
	}
	if shift != 0 || len(out) == 0 {
		return nil, errVLQ
	}
	return out, nil
}

func encodeVLQ(fields []int) string {
	var b strings.Builder
	for _, v := range fields {
		u := v << 1
		if v < 0 {
			u = (-v << 1) | 1
		}
		for {
			d := u & 31
			u >>= 5
			if u != 0 {
				d |= 32
			}
			b.WriteByte(vlqChars[d])
			if u == 0 {
				break
			}
		}
	}
	return b.String()
}

// Inline is the comment that gives the compiled code its source map m.
func Inline(m []byte) string {
	return "//# sourceMappingURL=data:application/json;base64," + base64.StdEncoding.EncodeToString(m)
}
