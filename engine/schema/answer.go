package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
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
// ParseAnswer does not look at the schema: a valid array or scalar is returned as is and
// the schema's validation refuses it.
func ParseAnswer(text string) (doc json.RawMessage, extracted bool, err error) {
	s := strings.TrimSpace(text)
	lead := len(text) - len(strings.TrimLeftFunc(text, unicode.IsSpace))
	if s == "" {
		return nil, false, ErrNoJSON
	}
	leadsWithJSON := s[0] == '{' || s[0] == '['
	end, err := firstValue(s)
	switch {
	case err == nil && strings.TrimSpace(s[end:]) == "":
		return json.RawMessage(s[:end]), false, nil
	case err == nil && leadsWithJSON:
		return nil, false, trailingError(strings.TrimSpace(s[end:]))
	case err != nil && leadsWithJSON:
		return nil, false, invalidJSON(text, lead, err)
	}
	// Prose first, or a scalar that may be prose ("2 steps: {...}").
	obj, truncated := finalObject(s)
	switch {
	case truncated:
		return nil, false, fmt.Errorf("%w: unexpected end of input", ErrInvalidJSON)
	case obj != "":
		return json.RawMessage(obj), true, nil
	case err == nil:
		return nil, false, trailingError(strings.TrimSpace(s[end:]))
	}
	if body, ok := strings.CutSuffix(s, codeFence); ok {
		if obj, _ := finalObject(strings.TrimSpace(body)); obj != "" {
			return nil, false, fmt.Errorf("%w (a closing code fence)", ErrTextAfter)
		}
	}
	if strings.HasSuffix(s, "}") && strings.Contains(s, "{") {
		return nil, false, fmt.Errorf("%w: the object at the end of the message does not parse", ErrInvalidJSON)
	}
	return nil, false, ErrNoJSON
}

func trailingError(rest string) error {
	if _, err := firstValue(rest); err == nil {
		return ErrMultiple
	}
	return ErrTextAfter
}

// firstValue returns the end of the JSON value that starts s.
func firstValue(s string) (int, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return 0, err
	}
	return int(dec.InputOffset()), nil
}

// finalObject finds the object that ends s, after some prose. truncated reports an
// object that opens and runs to the end of s without closing: every later "{" is inside it.
func finalObject(s string) (obj string, truncated bool) {
	for i := 1; i < len(s); i++ {
		j := strings.IndexByte(s[i:], '{')
		if j < 0 {
			break
		}
		i += j
		end, err := firstValue(s[i:])
		switch {
		case err == nil && strings.TrimSpace(s[i+end:]) == "":
			return s[i : i+end], false
		case errors.Is(err, io.ErrUnexpectedEOF):
			return "", true
		}
	}
	return "", false
}

// invalidJSON words a parse error with its line and column in the original text.
func invalidJSON(text string, lead int, err error) error {
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		line, col := lineCol(text, lead+int(syn.Offset))
		return fmt.Errorf("%w: %s (line %d, column %d)", ErrInvalidJSON, syn.Error(), line, col)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("%w: unexpected end of input", ErrInvalidJSON)
	default:
		return fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
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
