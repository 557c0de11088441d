package journal

import "bytes"

// UnescapeHTML gives JSON text back the <, > and & that Go's encoders write as \u003c, \u003e
// and \u0026 inside strings: the same text means the same value, and every command prints it
// the one way. A \\u003c (an escaped backslash before u003c) is left as it is.
func UnescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' || i+1 >= len(b) {
			out = append(out, c)
			continue
		}
		if b[i+1] == 'u' && i+5 < len(b) && b[i+2] == '0' && b[i+3] == '0' {
			switch string(b[i+4 : i+6]) {
			case "3c", "3C":
				out = append(out, '<')
				i += 5
				continue
			case "3e", "3E":
				out = append(out, '>')
				i += 5
				continue
			case "26":
				out = append(out, '&')
				i += 5
				continue
			}
		}
		// Any other escape is copied whole, its second byte too: an escaped backslash is
		// never taken for the start of another escape.
		out = append(out, c, b[i+1])
		i++
	}
	return out
}
