// Package answer finds the JSON document in a model's answer (Find, the rules of the package
// schema's ParseAnswer) and reads a document under the same rules (Document): one scan
// of the document, strict, within MaxDataDepth, whose values a Builder may take as it goes.
package answer

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/crw-dev/crw/engine/schema/internal/jsonscan"
)

// Errors of Find and Document. Their messages are short and stable: they go into repair prompts.
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

// Reading is what the scan that accepts a document does besides checking it.
type Reading struct {
	Build   jsonscan.Builder // gets the document's values as they are read; nil: none
	Compact bool             // the document comes back without whitespace between its tokens
}

// Find takes the JSON document out of a model's answer, as the package schema's
// ParseAnswer says, and counts the bytes its scanners examined. The one strict scan of the
// document it returns does what r asks.
func Find(text string, r Reading) (doc string, extracted bool, steps int, err error) {
	s := strings.TrimSpace(text)
	lead := len(text) - len(strings.TrimLeftFunc(text, unicode.IsSpace))
	if s == "" {
		return "", false, 0, ErrNoJSON
	}
	if s[0] == '{' || s[0] == '[' {
		sc := scanner(s, r)
		end, serr := sc.Value(0)
		switch {
		case serr != nil:
			return "", false, sc.Steps, invalidJSON(text, lead, serr)
		case end < len(s):
			return "", false, sc.Steps + len(s) - end, trailingError(strings.TrimSpace(s[end:]))
		}
		return sc.Compact(0, len(s)), false, sc.Steps, nil
	}
	// Prose first, or a scalar that may be prose ("2 steps: {...}").
	g := &jsonscan.Scanner{S: s, Memoize: true}
	end, gerr := g.Value(0)
	if gerr == nil && end == len(s) {
		sc := scanner(s, r)
		if _, serr := sc.Value(0); serr != nil {
			return "", false, g.Steps + sc.Steps, invalidJSON(text, lead, serr)
		}
		return sc.Compact(0, len(s)), false, g.Steps + sc.Steps, nil
	}
	obj, truncated := finalObject(g)
	steps = g.Steps
	switch {
	case truncated:
		return "", false, steps, fmt.Errorf("%w: unexpected end of input", ErrInvalidJSON)
	case obj >= 0:
		sc := scanner(s, r)
		if _, serr := sc.Value(obj); serr != nil {
			return "", false, steps + sc.Steps, invalidJSON(text, lead, serr)
		}
		return sc.Compact(obj, len(s)), true, steps + sc.Steps, nil
	case gerr == nil:
		return "", false, steps, trailingError(strings.TrimSpace(s[end:]))
	}
	fenced, fsteps := fencedObject(s)
	return "", false, steps + fsteps, notFound(s, fenced)
}

// fencedObject says whether s is an object that ends in a closing code fence, after some
// prose, and the bytes it examined to tell.
func fencedObject(s string) (bool, int) {
	body, ok := strings.CutSuffix(s, codeFence)
	if !ok {
		return false, 0
	}
	fence := &jsonscan.Scanner{S: strings.TrimSpace(body), Memoize: true}
	obj, _ := finalObject(fence)
	return obj >= 0, fence.Steps
}

// notFound says why an answer has no document: an object in a fenced block, an object at
// the end that does not parse, or no JSON at all.
func notFound(s string, fenced bool) error {
	switch {
	case fenced:
		return fmt.Errorf("%w (a closing code fence)", ErrTextAfter)
	case strings.HasSuffix(s, "}") && strings.Contains(s, "{"):
		return fmt.Errorf("%w: the object at the end of the message does not parse", ErrInvalidJSON)
	}
	return ErrNoJSON
}

// Document reads doc, which must be exactly one JSON value, surrounding whitespace aside,
// under the rules of Find: a document that is not gets the errors of Find. Its one scan
// does what r asks.
func Document(doc string, r Reading) error {
	t := strings.TrimSpace(doc)
	if t == "" {
		return ErrNoJSON
	}
	lead := len(doc) - len(strings.TrimLeftFunc(doc, unicode.IsSpace))
	sc := scanner(t, r)
	end, serr := sc.Value(0)
	if serr != nil {
		return invalidJSON(doc, lead, serr)
	}
	if end < len(t) {
		return trailingError(strings.TrimSpace(t[end:]))
	}
	return nil
}

// scanner reads answer data under its rules.
func scanner(s string, r Reading) *jsonscan.Scanner {
	return &jsonscan.Scanner{S: s, MaxDepth: MaxDataDepth, Strict: true, Build: r.Build, KeepSpaces: r.Compact}
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
	line, col := jsonscan.LineCol(text, lead+err.Off+1)
	return fmt.Errorf("%w: %s (line %d, column %d)", ErrInvalidJSON, err.Msg, line, col)
}
