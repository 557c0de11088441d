package runspec

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxInputDepth bounds how deeply a run's input nests: run.json and the started row must
// encode it, and the script's JSON.parse read it.
const maxInputDepth = 512

// checkInput refuses a run's input (valid JSON) that a JSON decoder would change without a
// word: invalid UTF-8, or a \u escape of a lone UTF-16 surrogate. Both become U+FFFD, so the
// script would get another input than the one given. It also refuses an input nested deeper
// than maxInputDepth.
func checkInput(data []byte) error {
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return fmt.Errorf("invalid UTF-8 at byte %d", i)
	}
	inString := false
	depth := 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case !inString && (c == '[' || c == '{'):
			if depth++; depth > maxInputDepth {
				return fmt.Errorf("nested deeper than %d levels at byte %d", maxInputDepth, i)
			}
		case !inString && (c == ']' || c == '}'):
			depth--
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\':
			if data[i+1] != 'u' {
				i++ // a one-letter escape
				continue
			}
			r := hex4(data[i+2 : i+6])
			switch {
			case utf16.IsSurrogate(r) && r < 0xdc00 && i+11 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' &&
				utf16.DecodeRune(r, hex4(data[i+8:i+12])) != utf8.RuneError:
				i += 11 // a pair
			case utf16.IsSurrogate(r):
				return fmt.Errorf("a lone UTF-16 surrogate %s at byte %d (it would read as U+FFFD)", data[i:i+6], i)
			default:
				i += 5
			}
		}
	}
	return nil
}

// hex4 decodes the 4 hex digits of a \u escape, which valid JSON guarantees.
func hex4(b []byte) rune {
	n, _ := strconv.ParseUint(string(b), 16, 32)
	return rune(n)
}
