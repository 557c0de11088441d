// Package jsonscan is the JSON parser of crw's answers and schemas. It reads one value at a
// time with an explicit stack, so that no input can overflow Go's stack, in time linear in
// its length, and words its syntax errors as encoding/json does, with the offending byte's
// offset. Its rules add to RFC 8259 only refusals RFC 8259 allows: a nesting limit and, for
// answer data (Strict), duplicate member names, escapes of lone UTF-16 surrogates and invalid
// UTF-8, so that two member names are the same exactly when they read the same. Numbers are
// not decoded: a Builder gets them as written.
package jsonscan

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Scanner reads JSON values out of S.
type Scanner struct {
	S        string
	MaxDepth int     // levels of arrays and objects, the top-level value being level 1; 0: no limit
	Strict   bool    // refuse duplicate member names, lone surrogate escapes and invalid UTF-8
	Build    Builder // gets the values read; nil: the scanner only checks
	// Memoize keeps, for each '{' whose object was read, the object's end or its failure:
	// finding the object that ends a message tries every '{', and the objects nested in one
	// tried before are not read again.
	Memoize bool
	// Steps counts the bytes examined, for the linear-time tests.
	Steps int
	// KeepSpaces has Value note in Spaces the runs of whitespace between the tokens of the
	// value it reads (never those inside a string), so that the value can be written
	// compactly without reading it again (Compact).
	KeepSpaces bool
	Spaces     []Span

	memo []int32
}

// Span is S[From:To].
type Span struct{ From, To int }

// Compact is S[from:to], the text of a value Value read with KeepSpaces, without the
// whitespace between its tokens: what json.Compact makes of it.
func (sc *Scanner) Compact(from, to int) string {
	if len(sc.Spaces) == 0 {
		return sc.S[from:to]
	}
	b := make([]byte, 0, to-from)
	for _, sp := range sc.Spaces {
		if sp.From >= from && sp.To <= to {
			b = append(b, sc.S[from:sp.From]...)
			from = sp.To
		}
	}
	return string(append(b, sc.S[from:to]...))
}

// Kind is the kind of a scalar a Builder gets.
type Kind uint8

// The kinds of scalars.
const (
	String Kind = iota
	Number
	True
	False
	Null
)

// Builder gets a value as the scanner reads it, in document order.
type Builder interface {
	Open(obj bool)                 // an array or object begins
	Key(name string)               // the name of the next member, decoded
	Scalar(kind Kind, text string) // a string decoded, a number as written; "" for the others
	Close()                        // the innermost open array or object ends
}

// Error is where S stops being acceptable JSON.
type Error struct {
	Off int    // the offending byte; len(S) when the input ends early
	Msg string // encoding/json's wording for a syntax error
	EOF bool   // the input ends inside the value
	// Refused says the JSON is valid and refused by a rule of the scanner: a duplicate
	// name, a lone surrogate, invalid UTF-8 (Strict), or nesting deeper than MaxDepth (Deep).
	Refused bool
	Deep    bool
}

func (e *Error) Error() string { return e.Msg }

const (
	memoSyntax = -1
	memoEOF    = -2
)

// errMemoSyntax stands for the syntax error an object tried before ran into; only whether
// it is one matters to the search Memoize serves.
var errMemoSyntax = &Error{Msg: "invalid object"}

func syntaxErr(s string, off int, context string) *Error {
	return &Error{Off: off, Msg: "invalid character " + quoteChar(s[off]) + " " + context}
}

func eofErr(s string) *Error {
	return &Error{Off: len(s), Msg: "unexpected end of input", EOF: true}
}

func refused(off int, format string, args ...any) *Error {
	return &Error{Off: off, Msg: fmt.Sprintf(format, args...), Refused: true}
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

// IsSpace tells JSON's whitespace.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

type state uint8

const (
	wantValue        state = iota
	wantValueOrClose       // just after '['
	wantKeyOrClose         // just after '{'
	wantKey                // after ',' in an object
	wantColon
	wantCommaOrClose // after a member or an element
)

// frame is an open array or object. It holds no pointers, so that a deep stack costs the
// collector nothing; the names Strict needs are in a slice beside it.
type frame struct {
	start int
	obj   bool
}

// Value reads the value that starts at S[pos:] after whitespace and returns the offset just
// after it, trailing whitespace not included.
func (sc *Scanner) Value(pos int) (int, *Error) {
	if sc.Memoize && len(sc.memo) != len(sc.S) {
		sc.memo = make([]int32, len(sc.S))
	}
	sc.Spaces = sc.Spaces[:0]
	r := run{sc: sc, decode: sc.Build != nil || sc.Strict}
	st := wantValue
	for {
		pos = r.skipSpace(pos)
		if pos == len(sc.S) {
			return r.fail(eofErr(sc.S))
		}
		sc.Steps++
		var done bool
		var err *Error
		switch st {
		case wantValue, wantValueOrClose:
			pos, st, done, err = r.value(pos, st)
		case wantKeyOrClose, wantKey:
			pos, st, done, err = r.key(pos, st)
		case wantColon:
			if sc.S[pos] != ':' {
				return r.fail(syntaxErr(sc.S, pos, "after object key"))
			}
			pos, st = pos+1, wantValue
		case wantCommaOrClose:
			pos, st, done, err = r.comma(pos)
		}
		if err != nil {
			return r.fail(err)
		}
		if !done {
			continue
		}
		// A value is complete.
		if len(r.stack) == 0 {
			return pos, nil
		}
		st = wantCommaOrClose
	}
}

// run is the state of one Value: the arrays and objects open around pos.
type run struct {
	sc     *Scanner
	decode bool
	stack  []frame
	names  []map[string]struct{} // Strict: the member names of each open frame
}

// fail ends the run with e; with Memoize, every object open around the failure fails the
// same way from its own start.
func (r *run) fail(e *Error) (int, *Error) {
	if r.sc.Memoize {
		code := int32(memoSyntax)
		if e.EOF {
			code = memoEOF
		}
		for _, f := range r.stack {
			if f.obj {
				r.sc.memo[f.start] = code
			}
		}
	}
	return 0, e
}

// skipSpace passes over whitespace; inside the value, with KeepSpaces, it notes where.
func (r *run) skipSpace(pos int) int {
	s, from := r.sc.S, pos
	for pos < len(s) && IsSpace(s[pos]) {
		pos++
	}
	r.sc.Steps += pos - from
	if pos > from && r.sc.KeepSpaces && len(r.stack) > 0 {
		r.sc.Spaces = append(r.sc.Spaces, Span{From: from, To: pos})
	}
	return pos
}

// value reads what starts a value at S[pos]: a scalar, an object a memo knows, or the
// opening bracket of an array or object; done says a whole value was read.
func (r *run) value(pos int, st state) (int, state, bool, *Error) {
	sc, c := r.sc, r.sc.S[pos]
	switch {
	case c == ']' && st == wantValueOrClose:
		return r.close(pos)
	case c == '{' && sc.Memoize && sc.memo[pos] != 0:
		switch m := sc.memo[pos]; m {
		case memoSyntax:
			return 0, st, false, errMemoSyntax
		case memoEOF:
			return 0, st, false, eofErr(sc.S)
		default:
			return int(m), st, true, nil
		}
	case c == '{' || c == '[':
		if sc.MaxDepth > 0 && len(r.stack) >= sc.MaxDepth {
			e := refused(pos, "nested deeper than %d levels", sc.MaxDepth)
			e.Deep = true
			return 0, st, false, e
		}
		r.stack = append(r.stack, frame{start: pos, obj: c == '{'})
		if sc.Strict {
			r.names = append(r.names, nil)
		}
		if sc.Build != nil {
			sc.Build.Open(c == '{')
		}
		if c == '{' {
			return pos + 1, wantKeyOrClose, false, nil
		}
		return pos + 1, wantValueOrClose, false, nil
	}
	end, err := sc.scalar(pos)
	return end, st, err == nil, err
}

// key reads a member name at S[pos], or the '}' of an empty object.
func (r *run) key(pos int, st state) (int, state, bool, *Error) {
	sc, c := r.sc, r.sc.S[pos]
	if c == '}' && st == wantKeyOrClose {
		return r.close(pos)
	}
	if c != '"' {
		return 0, st, false, syntaxErr(sc.S, pos, "looking for beginning of object key string")
	}
	key, end, err := sc.str(pos, r.decode)
	if err != nil {
		return 0, st, false, err
	}
	if sc.Strict {
		seen := r.names[len(r.names)-1]
		if _, dup := seen[key]; dup {
			return 0, st, false, refused(pos, "duplicate member name %s", quoteName(key))
		}
		if seen == nil {
			seen = map[string]struct{}{}
			r.names[len(r.names)-1] = seen
		}
		seen[key] = struct{}{}
	}
	if sc.Build != nil {
		sc.Build.Key(key)
	}
	return end, wantColon, false, nil
}

// comma reads what follows a member or an element: a comma, or the closing bracket.
func (r *run) comma(pos int) (int, state, bool, *Error) {
	s, c := r.sc.S, r.sc.S[pos]
	top := r.stack[len(r.stack)-1]
	switch {
	case c == ',' && top.obj:
		return pos + 1, wantKey, false, nil
	case c == ',':
		return pos + 1, wantValue, false, nil
	case c == '}' && top.obj, c == ']' && !top.obj:
		return r.close(pos)
	case top.obj:
		return 0, wantCommaOrClose, false, syntaxErr(s, pos, "after object key:value pair")
	}
	return 0, wantCommaOrClose, false, syntaxErr(s, pos, "after array element")
}

// close ends the innermost array or object at S[pos], its closing bracket: a value is done.
func (r *run) close(pos int) (int, state, bool, *Error) {
	sc := r.sc
	top := r.stack[len(r.stack)-1]
	r.stack = r.stack[:len(r.stack)-1]
	if sc.Strict {
		r.names = r.names[:len(r.names)-1]
	}
	if sc.Build != nil {
		sc.Build.Close()
	}
	pos++
	if top.obj && sc.Memoize {
		sc.memo[top.start] = int32(pos)
	}
	return pos, wantCommaOrClose, true, nil
}

// quoteName quotes a member name for a message, cut to 40 characters.
func quoteName(name string) string {
	if utf8.RuneCountInString(name) > 40 {
		name = string([]rune(name)[:40]) + "…"
	}
	return strconv.Quote(name)
}

// scalar reads a string, number, true, false or null at S[pos].
func (sc *Scanner) scalar(pos int) (int, *Error) {
	s := sc.S
	switch c := s[pos]; {
	case c == '"':
		str, end, err := sc.str(pos, sc.Build != nil)
		if err == nil && sc.Build != nil {
			sc.Build.Scalar(String, str)
		}
		return end, err
	case c == '-' || '0' <= c && c <= '9':
		end, err := sc.number(pos)
		if err == nil && sc.Build != nil {
			sc.Build.Scalar(Number, s[pos:end])
		}
		return end, err
	case c == 't', c == 'f', c == 'n':
		word, kind := "null", Null
		switch c {
		case 't':
			word, kind = "true", True
		case 'f':
			word, kind = "false", False
		}
		for i := 1; i < len(word); i++ {
			sc.Steps++
			switch {
			case pos+i == len(s):
				return 0, eofErr(s)
			case s[pos+i] != word[i]:
				return 0, syntaxErr(s, pos+i, fmt.Sprintf("in literal %s (expecting %s)", word, quoteChar(word[i])))
			}
		}
		if sc.Build != nil {
			sc.Build.Scalar(kind, "")
		}
		return pos + len(word), nil
	}
	return 0, syntaxErr(s, pos, "looking for beginning of value")
}

// number reads a number at S[pos] as RFC 8259 writes one; it ends before the first byte that
// cannot continue it.
func (sc *Scanner) number(pos int) (int, *Error) {
	s := sc.S
	i := pos
	digits := func() int {
		n := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
			n++
		}
		sc.Steps += n
		return n
	}
	// need reports the end of input, or a byte that is not a digit where one must come.
	need := func(context string) *Error {
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

// str reads the string whose opening quote is S[pos] and, with decode, what it says: escapes
// decoded, and invalid UTF-8 and lone surrogates read as U+FFFD as encoding/json reads them,
// unless the scanner is Strict and refuses them.
func (sc *Scanner) str(pos int, decode bool) (string, int, *Error) {
	s := sc.S
	i := pos + 1
	for i < len(s) {
		c := s[i]
		if c == '"' {
			sc.Steps += i + 1 - pos
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
	sc.Steps += i - pos
	var b []byte
	if decode {
		b = append(make([]byte, 0, i-pos+16), s[pos+1:i]...)
	}
	for i < len(s) {
		c := s[i]
		sc.Steps++
		switch {
		case c == '"':
			return string(b), i + 1, nil
		case c < 0x20:
			return "", 0, syntaxErr(s, i, "in string literal")
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 && sc.Strict {
				return "", 0, refused(i, "invalid UTF-8 in a string")
			}
			if decode {
				b = utf8.AppendRune(b, r)
			}
			i += size
			sc.Steps += size - 1
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
			sc.Steps += size - 1
		}
	}
	return "", 0, eofErr(s)
}

// escape decodes the escape at S[i] ('\\'): the rune and the escape's length, a surrogate
// pair being one escape.
func (sc *Scanner) escape(i int) (rune, int, *Error) {
	s := sc.S
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
	if sc.Strict {
		return 0, 0, refused(i, `lone surrogate \u%04x in a string`, r)
	}
	return unicode.ReplacementChar, 6, nil
}

// hex4 reads the four hexadecimal digits of a \u escape at S[i:].
func (sc *Scanner) hex4(i int) (rune, *Error) {
	s := sc.S
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

// LineCol turns a byte offset into a 1-based line and column (in runes). The offset is
// taken as just past the byte to name, as encoding/json's SyntaxError gives it.
func LineCol(text string, off int) (int, int) {
	off = min(max(off-1, 0), len(text))
	line, col := 1, 1
	for _, r := range text[:off] {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}
