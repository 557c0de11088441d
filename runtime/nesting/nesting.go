// Package nesting bounds how deeply a JavaScript or TypeScript source may nest, before esbuild
// or goja parses it: a scan of tokens, not a parse, shared by the loader (a module's source)
// and the runtime (what a script gives eval or the Function constructor).
package nesting

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Max bounds how deeply a module's source may nest. esbuild and goja parse and compile
// recursively, and the Go runtime ends the whole process when a goroutine's stack overflows:
// 200,000 nested brackets are enough, and 50,000 take a minute and most of a gigabyte. Real
// workflows nest a few dozen levels.
const Max = 2000

// arrowWeight is how many levels an arrow function counts for.
const arrowWeight = 5

// nestingKeywords are the words that open a nested expression or statement without a bracket.
var nestingKeywords = map[string]bool{
	"typeof": true, "void": true, "delete": true, "await": true, "new": true, "yield": true,
	"if": true, "else": true, "while": true, "for": true, "do": true, "with": true,
}

// statementKeywords start a statement: after a complete operand they cannot continue its
// expression, so the statement before them has ended even without a semicolon.
var statementKeywords = map[string]bool{
	"function": true, "class": true, "const": true, "let": true, "var": true, "if": true,
	"for": true, "while": true, "do": true, "return": true, "throw": true, "try": true,
	"switch": true, "break": true, "continue": true, "import": true, "export": true,
}

// continuing are the words that continue an expression after a line break.
var continuing = map[string]bool{"in": true, "instanceof": true, "of": true, "as": true, "satisfies": true}

// regexAfter are the words after which a slash starts a regular expression, not a division.
var regexAfter = map[string]bool{
	"return": true, "typeof": true, "instanceof": true, "in": true, "new": true,
	"delete": true, "void": true, "throw": true, "case": true, "do": true, "else": true,
	"yield": true, "await": true,
}

// TooDeep is the message of a source that nests more than Max levels deep.
var TooDeep = "the source nests more than " + strconv.Itoa(Max) + " levels deep (brackets, operators and nested statements); split the expression or the data"

// Error is a source that nests more than Max levels deep, and where it gets too
// deep: a 1-based line, and a column in characters.
type Error struct {
	Line, Column int
}

func (e *Error) Error() string {
	return TooDeep + " (line " + strconv.Itoa(e.Line) + ", column " + strconv.Itoa(e.Column) + ")"
}

// Check refuses a source that nests more than Max levels deep, before esbuild or goja sees
// it, and says where. It is a scan of tokens, not a parse, that errs towards counting too deep: every
// open bracket is a level; within a bracket, every operator, nesting keyword and closed
// bracket group adds a level until the expression ends (a chain of unary operators, a
// right-nested conditional, an else-if chain, a long binary expression or a call chain nest
// the parsers' trees as deeply as brackets do). An expression ends at a comma or semicolon,
// and where automatic semicolon insertion would end it: a line break, or a statement keyword,
// after a complete operand. Strings, comments, template text and regular expressions are
// skipped.
func Check(src string) *Error {
	s := nestScanner{src: src}
	if off := s.scan(); off >= 0 {
		line, col := position(src, off)
		return &Error{Line: line, Column: col}
	}
	return nil
}

type nestScanner struct {
	src string
	i   int
	// levels holds, for every open bracket, the operator count at its opening and whether
	// it is a template literal's ${.
	levels []level
	total  int  // the sum of the ops of levels
	ops    int  // levels the current expression adds to the open brackets
	regex  bool // a slash here starts a regular expression: no operand precedes it
	// lineBreak: a line break came after a complete operand.
	lineBreak bool
}

type level struct {
	ops      int
	template bool
}

// scan returns the offset where the source gets too deep, or -1.
func (s *nestScanner) scan() int {
	s.regex = true
	for s.i < len(s.src) {
		start := s.i
		c := s.src[s.i]
		if c != '\n' && c != ' ' && c != '\t' && c != '\r' && !(c == '/' && (s.peek(1) == '/' || s.peek(1) == '*')) {
			if s.lineBreak && (c == '{' || isIdentByte(c) && !continuing[s.peekWord()]) {
				s.endExpression()
			}
			s.lineBreak = false
		}
		switch {
		case c == '\n':
			s.i++
			s.lineBreak = s.lineBreak || !s.regex
			continue
		case c == ' ' || c == '\t' || c == '\r':
			s.i++
			continue
		case c == '/' && s.peek(1) == '/':
			s.skipLine()
			continue
		case c == '/' && s.peek(1) == '*':
			s.skipBlockComment()
			continue
		case c == '"' || c == '\'':
			s.skipString(c)
			s.regex = false
		case c == '`':
			s.i++
			if s.skipTemplate() {
				s.push(level{ops: s.ops, template: true})
				s.regex = true
			} else {
				s.regex = false
			}
		case c == '/' && s.regex:
			if s.depth()+s.skipRegex() > Max {
				return start
			}
			s.regex = false
		case c == '(' || c == '[' || c == '{':
			s.i++
			s.push(level{ops: s.ops})
			s.regex = true
		case c == ')' || c == ']' || c == '}':
			s.i++
			if n := len(s.levels); n > 0 {
				top := s.levels[n-1]
				s.levels = s.levels[:n-1]
				s.total -= top.ops
				if top.template && c == '}' && s.skipTemplate() {
					s.push(top)
					s.regex = true
					break
				}
				// The closed group is one more level of the expression around it.
				s.ops = top.ops + 1
			}
			s.regex = false
		case c == ',' || c == ';':
			s.i++
			s.ops = 0
			s.regex = true
		case isIdentByte(c):
			word := s.word()
			if statementKeywords[word] && !s.regex {
				s.endExpression()
			}
			if nestingKeywords[word] {
				s.ops++
			}
			// "async" opens a function, like an operator: a keyword after it is not a new statement.
			s.regex = regexAfter[word] || word == "async"
		case strings.IndexByte("+-*%=<>!~?&|^:.", c) >= 0 || c == '/':
			s.operator()
		default:
			s.i++
			s.regex = false
		}
		if s.depth() > Max {
			return start
		}
	}
	return -1
}

// depth is the nesting at the scanner's position: each open bracket and what its expression
// had added when it opened, and what the current expression adds.
func (s *nestScanner) depth() int { return s.total + len(s.levels) + s.ops }

func (s *nestScanner) push(l level) {
	s.levels = append(s.levels, l)
	s.total += l.ops
	s.ops = 0
}

// endExpression starts a new expression at the current bracket level.
func (s *nestScanner) endExpression() { s.ops = 0 }

// peekWord returns the identifier at the position without passing it.
func (s *nestScanner) peekWord() string {
	end := s.i
	for end < len(s.src) && isIdentByte(s.src[end]) {
		end++
	}
	return s.src[s.i:end]
}

func (s *nestScanner) peek(k int) byte {
	if s.i+k < len(s.src) {
		return s.src[s.i+k]
	}
	return 0
}

// skipLine passes a line comment, which ends at any of JavaScript's line terminators: LF,
// CR, U+2028 and U+2029.
func (s *nestScanner) skipLine() {
	for s.i < len(s.src) && !s.atLineEnd() {
		s.i++
	}
}

// atLineEnd reports whether a line terminator starts at the position.
func (s *nestScanner) atLineEnd() bool {
	switch s.src[s.i] {
	case '\n', '\r':
		return true
	case 0xe2:
		return s.peek(1) == 0x80 && (s.peek(2) == 0xa8 || s.peek(2) == 0xa9)
	}
	return false
}

func (s *nestScanner) skipBlockComment() {
	s.i += 2
	for s.i < len(s.src) && !(s.src[s.i] == '*' && s.peek(1) == '/') {
		s.i++
	}
	s.i += 2
}

// skipString passes a quoted string; an unterminated one ends at the line's end.
func (s *nestScanner) skipString(quote byte) {
	s.i++
	for s.i < len(s.src) {
		switch s.src[s.i] {
		case '\\':
			s.i += 2
			continue
		case quote:
			s.i++
			return
		case '\n', '\r':
			return
		}
		s.i++
	}
}

// skipTemplate passes template text up to its closing backtick (false) or up to and past a
// "${" (true).
func (s *nestScanner) skipTemplate() bool {
	for s.i < len(s.src) {
		switch s.src[s.i] {
		case '\\':
			s.i += 2
			continue
		case '`':
			s.i++
			return false
		case '$':
			if s.peek(1) == '{' {
				s.i += 2
				return true
			}
		}
		s.i++
	}
	return false
}

// skipRegex passes a regular expression literal and its flags, and returns how deeply the
// brackets inside it nest: the regular expression's parser recurses on its groups, and a slash
// taken for a regular expression that is in fact a division must not hide brackets. Every
// bracket counts, escaped or in a class, which can only count too deep.
func (s *nestScanner) skipRegex() int {
	s.i++
	inClass := false
	depth, deepest := 0, 0
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == '\\':
			if next := s.peek(1); next == '(' || next == '[' || next == '{' {
				depth++
				deepest = max(deepest, depth)
			}
			s.i += 2
			continue
		case s.atLineEnd():
			return deepest
		case c == '(' || c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
			if c == '[' {
				inClass = true
			}
		case c == ')' || c == ']' || c == '}':
			depth = max(depth-1, 0)
			if c == ']' {
				inClass = false
			}
		case c == '/' && !inClass:
			s.i++
			for s.i < len(s.src) && isIdentByte(s.src[s.i]) {
				s.i++
			}
			return deepest
		}
		s.i++
	}
	return deepest
}

func (s *nestScanner) word() string {
	start := s.i
	for s.i < len(s.src) && isIdentByte(s.src[s.i]) {
		s.i++
	}
	return s.src[start:s.i]
}

// operator passes a run of operator characters. Each unary-capable character of the run
// (! ~ + -) counts as one level, since "!!!!x" nests four deep; any other run counts one,
// a member access (".") too: "a.b.c" nests as deep as "a+b+c".
func (s *nestScanner) operator() {
	start := s.i
	for s.i < len(s.src) && strings.IndexByte("+-*%=<>!~?&|^:./", s.src[s.i]) >= 0 {
		if s.src[s.i] == '/' && s.i+1 < len(s.src) && (s.src[s.i+1] == '/' || s.src[s.i+1] == '*') {
			break // a comment starts
		}
		s.i++
	}
	run := s.src[start:s.i]
	unary := 0
	for _, c := range run {
		if c == '!' || c == '~' || c == '+' || c == '-' {
			unary++
		}
	}
	s.ops += max(1, unary)
	if strings.HasSuffix(run, "=>") {
		// Each level of a chain of arrow functions costs the parsers far more than a bracket
		// does: 2,000 take minutes, 400 a fraction of a second.
		s.ops += arrowWeight - 1
	}
	s.regex = !strings.HasSuffix(run, "++") && !strings.HasSuffix(run, "--")
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// position gives the 1-based line and column (in characters) of a byte offset.
func position(src string, off int) (int, int) {
	line, lineStart := 1, 0
	for i := 0; i < off && i < len(src); i++ {
		if src[i] == '\n' {
			line++
			lineStart = i + 1
		}
	}
	return line, utf8.RuneCountInString(src[lineStart:min(off, len(src))]) + 1
}
