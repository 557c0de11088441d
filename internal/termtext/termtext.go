// Package termtext makes text from a workflow or a model safe to print on a terminal: what
// would move the cursor, recolour, retitle or erase (escape sequences, carriage returns,
// bidirectional overrides) is printed escaped, and a line break starts an indented line, so a
// workflow's line can never pass for one of crw's own.
package termtext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Safe is s as it may be printed on a terminal: tabs kept, every other control character,
// DEL, C1 control and bidirectional override escaped (\x1b, \u202e), invalid UTF-8 as \xff,
// and each line after the first indented by indent.
func Safe(s, indent string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString("\n" + indent)
		case r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func clean(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\t' || r == 0x7f || unsafe(r) || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// unsafe is a C1 control or a bidirectional override or isolate.
func unsafe(r rune) bool {
	return (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// Clip is s cut to its first n bytes, an ellipsis marking the cut, for a message that quotes
// what a script or a journal said.
func Clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
