package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/crw-dev/crw/engine/schema/internal/jsonscan"
)

// Errors of ParseAnswer. Their messages are short and stable: they go into repair prompts.
var (
	ErrNoJSON      = errors.New("no JSON document")
	ErrTextAfter   = errors.New("text after the JSON document")
	ErrMultiple    = errors.New("more than one JSON document")
	ErrInvalidJSON = errors.New("invalid JSON") // wrapped with the parser's complaint
)

const codeFence = "```"

// MaxDataDepth is how deeply an answer's data may nest (arrays and objects, the top-level
// value being level 1). One rule for every reader of answer data: the parser and the
// validator refuse deeper data, and the CallResult builder (runtime/jsutil, 512 levels
// with the result's own wrapping) takes all they accept, so a journaled answer can always
// be delivered.
const MaxDataDepth = 256

// ParseAnswer takes the JSON document out of a model's answer.
//
// The answer is valid when it is exactly one JSON value, surrounding whitespace aside;
// a second value, a stray closing bracket or any text after the value is invalid. An
// answer that starts with "{" or "[" is that document, whatever follows it.
//
// When the answer is prose followed by a JSON object that ends the message, the object
// is taken out and extracted is true: the object starting at the earliest "{" from which
// the rest of the message is exactly one object, so an object nested in it never wins.
// Only an object is taken out this way, never an array or a scalar. An object that opens
// and never closes makes the answer invalid (a truncated answer), rather than letting an
// object nested in it pass for the answer.
//
// A fenced block ("```json" ... "```") is invalid: the closing fence is text after the
// document, and the error says so.
//
// The document follows RFC 8259 with the refusals it allows, which make every accepted
// document deliverable to a script as it was written: an object with two members of the
// same name (compared as they read, escapes decoded), a string with an escaped lone UTF-16
// surrogate ("\ud800") or invalid UTF-8, and data nested deeper than MaxDataDepth are
// invalid JSON, and the error says where. Numbers are kept as written, whatever their size.
//
// ParseAnswer does not look at the schema: a valid array or scalar is returned as is and
// the schema's validation refuses it. It takes time linear in the answer's length.
func ParseAnswer(text string) (doc json.RawMessage, extracted bool, err error) {
	doc, extracted, _, err = parseAnswer(text)
	return doc, extracted, err
}

// parseAnswer is ParseAnswer, counting the bytes its scanners examined.
func parseAnswer(text string) (doc json.RawMessage, extracted bool, steps int, err error) {
	s := strings.TrimSpace(text)
	lead := len(text) - len(strings.TrimLeftFunc(text, unicode.IsSpace))
	if s == "" {
		return nil, false, 0, ErrNoJSON
	}
	if s[0] == '{' || s[0] == '[' {
		sc := answerScanner(s)
		end, serr := sc.Value(0)
		switch {
		case serr != nil:
			return nil, false, sc.Steps, invalidJSON(text, lead, serr)
		case end < len(s):
			return nil, false, sc.Steps + len(s) - end, trailingError(strings.TrimSpace(s[end:]))
		}
		return json.RawMessage(s), false, sc.Steps, nil
	}
	// Prose first, or a scalar that may be prose ("2 steps: {...}").
	g := &jsonscan.Scanner{S: s, Memoize: true}
	end, gerr := g.Value(0)
	if gerr == nil && end == len(s) {
		sc := answerScanner(s)
		if _, serr := sc.Value(0); serr != nil {
			return nil, false, g.Steps + sc.Steps, invalidJSON(text, lead, serr)
		}
		return json.RawMessage(s), false, g.Steps + sc.Steps, nil
	}
	obj, truncated := finalObject(g)
	steps = g.Steps
	switch {
	case truncated:
		return nil, false, steps, fmt.Errorf("%w: unexpected end of input", ErrInvalidJSON)
	case obj >= 0:
		sc := answerScanner(s)
		if _, serr := sc.Value(obj); serr != nil {
			return nil, false, steps + sc.Steps, invalidJSON(text, lead, serr)
		}
		return json.RawMessage(s[obj:]), true, steps + sc.Steps, nil
	case gerr == nil:
		return nil, false, steps, trailingError(strings.TrimSpace(s[end:]))
	}
	if body, ok := strings.CutSuffix(s, codeFence); ok {
		t := strings.TrimSpace(body)
		fence := &jsonscan.Scanner{S: t, Memoize: true}
		obj, _ := finalObject(fence)
		steps += fence.Steps
		if obj >= 0 {
			return nil, false, steps, fmt.Errorf("%w (a closing code fence)", ErrTextAfter)
		}
	}
	if strings.HasSuffix(s, "}") && strings.Contains(s, "{") {
		return nil, false, steps, fmt.Errorf("%w: the object at the end of the message does not parse", ErrInvalidJSON)
	}
	return nil, false, steps, ErrNoJSON
}

// answerScanner reads answer data under its rules.
func answerScanner(s string) *jsonscan.Scanner {
	return &jsonscan.Scanner{S: s, MaxDepth: MaxDataDepth, Strict: true}
}

func trailingError(rest string) error {
	if _, err := (&jsonscan.Scanner{S: rest}).Value(0); err == nil {
		return ErrMultiple
	}
	return ErrTextAfter
}

// finalObject finds the object that ends g.S, after some prose: its start, or -1.
// truncated reports an object that opens and runs to the end of g.S without closing:
// every later "{" is inside it. Every "{" is tried in turn, and g (Memoize) keeps each
// object read along the way, so no part of the text is read more than a few times.
func finalObject(g *jsonscan.Scanner) (start int, truncated bool) {
	s := g.S
	for i := 1; i < len(s); i++ {
		j := strings.IndexByte(s[i:], '{')
		if j < 0 {
			break
		}
		i += j
		end, err := g.Value(i)
		switch {
		case err == nil && end == len(s):
			return i, false
		case err != nil && err.EOF:
			return -1, true
		}
	}
	return -1, false
}

// invalidJSON words a scanner's complaint with its line and column in the original text.
func invalidJSON(text string, lead int, err *jsonscan.Error) error {
	if err.EOF {
		return fmt.Errorf("%w: unexpected end of input", ErrInvalidJSON)
	}
	line, col := lineCol(text, lead+err.Off+1)
	return fmt.Errorf("%w: %s (line %d, column %d)", ErrInvalidJSON, err.Msg, line, col)
}

// lineCol turns a byte offset into a 1-based line and column (in runes). A SyntaxError's
// offset is just past the offending byte.
func lineCol(text string, off int) (int, int) {
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
