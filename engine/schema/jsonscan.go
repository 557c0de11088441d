package schema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonScanner reads one JSON value at a time out of s. It is the one JSON parser of answers
// and schemas: it works with an explicit stack, so no input can overflow Go's stack, takes
// linear time, and words its syntax errors as encoding/json does, with the offending byte's
// offset. Its rules add to RFC 8259 only refusals RFC 8259 allows: a nesting limit and, for
// answer data (strict), duplicate member names, escapes of lone UTF-16 surrogates and
// invalid UTF-8, so that two member names are the same exactly when they read the same.
type jsonScanner struct {
	s        string
	maxDepth int  // levels of arrays and objects, the top-level value being level 1; 0: no limit
	strict   bool // refuse duplicate member names, lone surrogate escapes and invalid UTF-8
	tree     bool // build a *value
	// memo, when set, keeps for each '{' whose object was read the object's end, or
	// memoSyntax / memoEOF: finding the object that ends a message tries every '{', and the
	// objects nested in one tried before are not read again.
	memo  []int32
	steps int // bytes examined: the linear-time tests count them
}

const (
	memoSyntax = -1
	memoEOF    = -2
)

// errMemoSyntax stands for the syntax error an object tried before ran into; only whether
// it is one matters to the search the memo serves.
var errMemoSyntax = &scanError{msg: "invalid object"}

// scanError is a place where s stops being acceptable JSON.
type scanError struct {
	off  int    // the offending byte; len(s) when the input ends early
	msg  string // encoding/json's wording for syntax errors
	eof  bool   // the input ends inside the value
	deep bool   // the value nests deeper than the limit
}

func (e *scanError) Error() string { return e.msg }

func syntaxErr(s string, off int, context string) *scanError {
	return &scanError{off: off, msg: "invalid character " + quoteChar(s[off]) + " " + context}
}

func eofErr(s string) *scanError {
	return &scanError{off: len(s), msg: "unexpected end of input", eof: true}
}

// quoteChar formats c as encoding/json does in its syntax errors.
func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	q := strconv.Quote(string(rune(c)))
	return "'" + q[1:len(q)-1] + "'"
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

type scanState uint8

const (
	wantValue        scanState = iota
	wantValueOrClose           // just after '['
	wantKeyOrClose             // just after '{'
	wantKey                    // after ',' in an object
	wantColon
	wantCommaOrClose // after a member or an element
)

// scanFrame is an open array or object. It holds no pointers, so that a deep stack costs
// the collector nothing; what tree and strict need of a frame is in a frameData beside it.
type scanFrame struct {
	start int
	obj   bool
}

type frameData struct {
	node  *value
	key   string
	names map[string]struct{} // strict: the member names so far
}

// value reads the value that starts at s[pos:] after whitespace and returns the offset just
// after it (trailing whitespace not included) and, with tree, the value.
func (sc *jsonScanner) value(pos int) (int, *value, *scanError) {
	s := sc.s
	var stack []scanFrame
	var data []frameData // with tree or strict, one for each frame
	keep := sc.tree || sc.strict
	var root *value
	fail := func(e *scanError) (int, *value, *scanError) {
		if sc.memo != nil {
			code := int32(memoSyntax)
			if e.eof {
				code = memoEOF
			}
			for _, f := range stack {
				if f.obj {
					sc.memo[f.start] = code
				}
			}
		}
		return 0, nil, e
	}
	attach := func(v *value) {
		if !sc.tree {
			return
		}
		if len(stack) == 0 {
			root = v
			return
		}
		top := &data[len(data)-1]
		if stack[len(stack)-1].obj {
			top.node.obj = append(top.node.obj, member{key: top.key, val: v})
		} else {
			top.node.arr = append(top.node.arr, v)
		}
	}
	state := wantValue
	for {
		for pos < len(s) && isSpace(s[pos]) {
			pos++
			sc.steps++
		}
		if pos == len(s) {
			return fail(eofErr(s))
		}
		c := s[pos]
		sc.steps++
		closed := false
		switch state {
		case wantValue, wantValueOrClose:
			if c == ']' && state == wantValueOrClose {
				closed = true
				break
			}
			if c == '{' && sc.memo != nil && sc.memo[pos] != 0 {
				switch m := sc.memo[pos]; m {
				case memoSyntax:
					return fail(errMemoSyntax)
				case memoEOF:
					return fail(eofErr(s))
				default:
					pos = int(m)
				}
				break
			}
			if c == '{' || c == '[' {
				if sc.maxDepth > 0 && len(stack) >= sc.maxDepth {
					return fail(&scanError{off: pos, msg: fmt.Sprintf("nested deeper than %d levels", sc.maxDepth), deep: true})
				}
				f := scanFrame{start: pos, obj: c == '{'}
				if keep {
					var d frameData
					if sc.tree {
						d.node = &value{kind: kindArray}
						if f.obj {
							d.node.kind = kindObject
						}
						attach(d.node)
					}
					data = append(data, d)
				}
				stack = append(stack, f)
				pos++
				state = wantValueOrClose
				if f.obj {
					state = wantKeyOrClose
				}
				continue
			}
			v, end, err := sc.scalar(pos)
			if err != nil {
				return fail(err)
			}
			attach(v)
			pos = end
		case wantKeyOrClose, wantKey:
			if c == '}' && state == wantKeyOrClose {
				closed = true
				break
			}
			if c != '"' {
				return fail(syntaxErr(s, pos, "looking for beginning of object key string"))
			}
			key, end, err := sc.str(pos, keep)
			if err != nil {
				return fail(err)
			}
			if keep {
				top := &data[len(data)-1]
				if sc.strict {
					if _, dup := top.names[key]; dup {
						return fail(&scanError{off: pos, msg: "duplicate member name " + quoteName(key)})
					}
					if top.names == nil {
						top.names = map[string]struct{}{}
					}
					top.names[key] = struct{}{}
				}
				top.key = key
			}
			pos = end
			state = wantColon
			continue
		case wantColon:
			if c != ':' {
				return fail(syntaxErr(s, pos, "after object key"))
			}
			pos++
			state = wantValue
			continue
		case wantCommaOrClose:
			top := &stack[len(stack)-1]
			switch {
			case c == ',':
				pos++
				state = wantValue
				if top.obj {
					state = wantKey
				}
				continue
			case c == '}' && top.obj, c == ']' && !top.obj:
				closed = true
			case top.obj:
				return fail(syntaxErr(s, pos, "after object key:value pair"))
			default:
				return fail(syntaxErr(s, pos, "after array element"))
			}
		}
		if closed {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if keep {
				data[len(data)-1] = frameData{}
				data = data[:len(data)-1]
			}
			pos++
			if top.obj && sc.memo != nil {
				sc.memo[top.start] = int32(pos)
			}
		}
		// A value is complete.
		if len(stack) == 0 {
			return pos, root, nil
		}
		state = wantCommaOrClose
	}
}

// quoteName quotes a member name for a message, cut to 40 characters.
func quoteName(name string) string {
	if utf8.RuneCountInString(name) > 40 {
		name = string([]rune(name)[:40]) + "…"
	}
	return strconv.Quote(name)
}

// scalar reads a string, number, true, false or null at s[pos].
func (sc *jsonScanner) scalar(pos int) (*value, int, *scanError) {
	s := sc.s
	switch c := s[pos]; {
	case c == '"':
		str, end, err := sc.str(pos, sc.tree)
		if err != nil {
			return nil, 0, err
		}
		if !sc.tree {
			return nil, end, nil
		}
		return &value{kind: kindString, str: str}, end, nil
	case c == '-' || '0' <= c && c <= '9':
		end, err := sc.number(pos)
		if err != nil {
			return nil, 0, err
		}
		if !sc.tree {
			return nil, end, nil
		}
		return &value{kind: kindNumber, num: json.Number(s[pos:end])}, end, nil
	case c == 't', c == 'f', c == 'n':
		word := "null"
		switch c {
		case 't':
			word = "true"
		case 'f':
			word = "false"
		}
		for i := 1; i < len(word); i++ {
			sc.steps++
			switch {
			case pos+i == len(s):
				return nil, 0, eofErr(s)
			case s[pos+i] != word[i]:
				return nil, 0, syntaxErr(s, pos+i, fmt.Sprintf("in literal %s (expecting %s)", word, quoteChar(word[i])))
			}
		}
		if !sc.tree {
			return nil, pos + len(word), nil
		}
		switch c {
		case 't':
			return &value{kind: kindBool, b: true}, pos + 4, nil
		case 'f':
			return &value{kind: kindBool}, pos + 5, nil
		}
		return &value{kind: kindNull}, pos + 4, nil
	}
	return nil, 0, syntaxErr(s, pos, "looking for beginning of value")
}

// number reads a number at s[pos] as RFC 8259 writes one; it ends before the first byte
// that cannot continue it. Its value is not decoded: a number is kept as written.
func (sc *jsonScanner) number(pos int) (int, *scanError) {
	s := sc.s
	i := pos
	digits := func() int {
		n := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
			n++
		}
		sc.steps += n
		return n
	}
	// need reports the end of input or a byte that is not a digit where one must come.
	need := func(context string) *scanError {
		if i == len(s) {
			return eofErr(s)
		}
		return syntaxErr(s, i, context)
	}
	if s[i] == '-' {
		i++
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return 0, need("in numeric literal")
		}
	}
	if s[i] == '0' {
		i++
	} else {
		digits()
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return 0, need("after decimal point in numeric literal")
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0, need("in exponent of numeric literal")
		}
	}
	return i, nil
}

// str reads the string whose opening quote is s[pos] and, with decode, what it says:
// escapes decoded, and invalid UTF-8 and lone surrogates read as U+FFFD as encoding/json
// reads them, unless the scanner is strict and refuses them.
func (sc *jsonScanner) str(pos int, decode bool) (string, int, *scanError) {
	s := sc.s
	i := pos + 1
	for i < len(s) {
		c := s[i]
		if c == '"' {
			sc.steps += i + 1 - pos
			if decode {
				return s[pos+1 : i], i + 1, nil
			}
			return "", i + 1, nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		i++
	}
	sc.steps += i - pos
	var b []byte
	if decode {
		b = append(make([]byte, 0, i-pos+16), s[pos+1:i]...)
	}
	for i < len(s) {
		c := s[i]
		sc.steps++
		switch {
		case c == '"':
			return string(b), i + 1, nil
		case c < 0x20:
			return "", 0, syntaxErr(s, i, "in string literal")
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				if sc.strict {
					return "", 0, &scanError{off: i, msg: "invalid UTF-8 in a string"}
				}
			}
			if decode {
				b = utf8.AppendRune(b, r)
			}
			i += size
			sc.steps += size - 1
		case c != '\\':
			if decode {
				b = append(b, c)
			}
			i++
		default:
			r, size, err := sc.escape(i)
			if err != nil {
				return "", 0, err
			}
			if decode {
				b = utf8.AppendRune(b, r)
			}
			i += size
			sc.steps += size - 1
		}
	}
	return "", 0, eofErr(s)
}

// escape decodes the escape at s[i] ('\\'): the rune and the escape's length, a surrogate
// pair being one escape.
func (sc *jsonScanner) escape(i int) (rune, int, *scanError) {
	s := sc.s
	if i+1 == len(s) {
		return 0, 0, eofErr(s)
	}
	switch c := s[i+1]; c {
	case '"', '\\', '/':
		return rune(c), 2, nil
	case 'b':
		return '\b', 2, nil
	case 'f':
		return '\f', 2, nil
	case 'n':
		return '\n', 2, nil
	case 'r':
		return '\r', 2, nil
	case 't':
		return '\t', 2, nil
	case 'u':
	default:
		return 0, 0, syntaxErr(s, i+1, "in string escape code")
	}
	r, err := sc.hex4(i + 2)
	if err != nil {
		return 0, 0, err
	}
	if !utf16.IsSurrogate(r) {
		return r, 6, nil
	}
	if r < 0xdc00 && i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
		if lo, err := sc.hex4(i + 8); err == nil {
			if pair := utf16.DecodeRune(r, lo); pair != unicode.ReplacementChar {
				return pair, 12, nil
			}
		}
	}
	if sc.strict {
		return 0, 0, &scanError{off: i, msg: fmt.Sprintf(`lone surrogate \u%04x in a string`, r)}
	}
	return unicode.ReplacementChar, 6, nil
}

// hex4 reads the four hexadecimal digits of a \u escape at s[i:].
func (sc *jsonScanner) hex4(i int) (rune, *scanError) {
	s := sc.s
	var r rune
	for j := i; j < i+4; j++ {
		if j == len(s) {
			return 0, eofErr(s)
		}
		c := s[j]
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, syntaxErr(s, j, `in \u hexadecimal character escape`)
		}
		r = r<<4 | rune(d)
	}
	return r, nil
}
