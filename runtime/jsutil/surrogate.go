package jsutil

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// LoneSurrogate finds the first lone UTF-16 surrogate of s, a JS string whose Go text is text
// (s.String()): a surrogate that is not half of a pair. Go's text of a JS string holds U+FFFD
// in its place, so two strings that differ there read the same to the host, to the journal and
// to a replay of it; a caller refuses it. The text is searched first: one without U+FFFD has
// none, and its string is not read a unit at a time.
func LoneSurrogate(s goja.String, text string) (index int, unit uint16, found bool) {
	if !strings.ContainsRune(text, utf8.RuneError) {
		return 0, 0, false
	}
	n := s.Length()
	for i := 0; i < n; i++ {
		switch c := s.CharAt(i); {
		case c >= 0xd800 && c < 0xdc00:
			if i+1 < n {
				if d := s.CharAt(i + 1); d >= 0xdc00 && d < 0xe000 {
					i++ // a pair
					continue
				}
			}
			return i, c, true
		case c >= 0xdc00 && c < 0xe000:
			return i, c, true
		}
	}
	return 0, 0, false
}

// SurrogateProblem says what LoneSurrogate finds in s, for an error message ("holds a lone
// UTF-16 surrogate \ud800 at index 3 …"), or "".
func SurrogateProblem(s goja.String, text string) string {
	if i, c, ok := LoneSurrogate(s, text); ok {
		return fmt.Sprintf("holds a lone UTF-16 surrogate \\u%04x at index %d (it would read as U+FFFD)", c, i)
	}
	return ""
}
