package schema

import (
	"errors"
	"strings"
	"testing"
)

func TestParseAnswer(t *testing.T) {
	cases := []struct {
		name      string
		text      string
		doc       string
		extracted bool
		err       error
	}{
		{"plain", `{"a":1}`, `{"a":1}`, false, nil},
		{"whitespace", "\n\t {\"a\": [1, 2]}  \n", `{"a": [1, 2]}`, false, nil},
		{"array root", `[1,2]`, `[1,2]`, false, nil},
		{"scalar root", `"done"`, `"done"`, false, nil},
		{"prose then object", "Here is the plan:\n{\"a\":{\"b\":1}}", `{"a":{"b":1}}`, true, nil},
		{"prose with braces then object", "Use {x} as a placeholder. {\"a\":1}\n", `{"a":1}`, true, nil},
		{"prose with an unclosed brace", "Result { see below: {\"a\":{\"b\":{}}}", `{"a":{"b":{}}}`, true, nil},
		{"number-led prose then object", "2 steps: {\"a\":1}", `{"a":1}`, true, nil},
		{"object then prose", `{"a":1} Let me know if you need more.`, "", false, ErrTextAfter},
		{"two objects", `{"a":1} {"b":2}`, "", false, ErrMultiple},
		{"two objects adjacent", `{"a":1}{"b":2}`, "", false, ErrMultiple},
		{"object then array", "{\"a\":1}\n[2]", "", false, ErrMultiple},
		{"object, prose, object", `{"a":1} and also {"b":2}`, "", false, ErrTextAfter},
		{"trailing brace", `{"a":1}}`, "", false, ErrTextAfter},
		{"trailing bracket", `[1]]`, "", false, ErrTextAfter},
		{"code fence", "```json\n{\"a\":1}\n```", "", false, ErrTextAfter},
		{"prose and code fence", "Sure:\n```json\n{\"a\":1}\n```\n", "", false, ErrTextAfter},
		{"fence without language", "```\n{\"a\":1}\n```", "", false, ErrTextAfter},
		{"prose then array", "Here: [1,2]", "", false, ErrNoJSON},
		{"prose only", "I cannot do that.", "", false, ErrNoJSON},
		{"empty", "", "", false, ErrNoJSON},
		{"blank", " \n\t", "", false, ErrNoJSON},
		{"truncated", `{"a":[1,`, "", false, ErrInvalidJSON},
		{"trailing comma", `{"a":1,}`, "", false, ErrInvalidJSON},
		{"prose then broken object", `Here: {"a":}`, "", false, ErrInvalidJSON},
		{"scalar then prose", "true, that works", "", false, ErrTextAfter},
		{"truncated nested", `{"a":{"b":1}`, "", false, ErrInvalidJSON},
		{"prose then truncated nested", `Here: {"a":{"b":1}`, "", false, ErrInvalidJSON},
		{"prose then truncated", `Here: {"a":[1,2`, "", false, ErrInvalidJSON},
		{"brace-led prose", `[Note] the answer: {"a":1}`, "", false, ErrInvalidJSON},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, extracted, err := ParseAnswer(c.text)
			if !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if string(doc) != c.doc || extracted != c.extracted {
				t.Errorf("got %q extracted=%v, want %q extracted=%v", doc, extracted, c.doc, c.extracted)
			}
		})
	}
}

func TestParseAnswerMessages(t *testing.T) {
	cases := map[string]string{
		"nothing":                      "no JSON document",
		`{"a":1} more`:                 "text after the JSON document",
		`{"a":1} {}`:                   "more than one JSON document",
		"```json\n{\"a\":1}\n```":      "text after the JSON document (a closing code fence)",
		"{\n  \"a\": 1,\n  \"b\" 2\n}": "invalid JSON: invalid character '2' after object key (line 3, column 7)",
		`{"a":[1,`:                     "invalid JSON: unexpected end of input",
		`Here: {"a":}`:                 "invalid JSON: the object at the end of the message does not parse",
	}
	for text, want := range cases {
		if _, _, err := ParseAnswer(text); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}

// Many braces in prose must not make extraction slow.
func TestParseAnswerManyBraces(t *testing.T) {
	text := "Placeholders: " + strings.Repeat("{x} ", 20000) + `{"a":1}`
	doc, extracted, err := ParseAnswer(text)
	if err != nil || !extracted || string(doc) != `{"a":1}` {
		t.Fatalf("got %q %v %v", doc, extracted, err)
	}
}
