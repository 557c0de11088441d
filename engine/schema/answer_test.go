package schema

import (
	"errors"
	"fmt"
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

// Answer data follows RFC 8259 with the refusals it allows: each is invalid JSON, whether
// the document leads the answer or is taken out of prose, and the error says where.
func TestParseAnswerRefusals(t *testing.T) {
	anything, err := Compile([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	deep := func(n int) string { return strings.Repeat(`{"a":`, n-1) + "[]" + strings.Repeat("}", n-1) }
	cases := []struct{ name, text, want string }{
		{"duplicate name", `{"v":"x","v":1}`, `invalid JSON: duplicate member name "v" (line 1, column 10)`},
		{"duplicate name in prose", "Answer: {\"v\":\"x\",\n \"v\":1}", `invalid JSON: duplicate member name "v" (line 2, column 2)`},
		{"duplicate name nested", `{"a":{"b":1,"c":2,"b":3}}`, `invalid JSON: duplicate member name "b" (line 1, column 19)`},
		{"duplicate name escaped", `{"ab":1,"a\u0062":2}`, `invalid JSON: duplicate member name "ab" (line 1, column 9)`},
		{"lone high surrogate", `{"v":"\ud800"}`, `invalid JSON: lone surrogate \ud800 in a string (line 1, column 7)`},
		{"lone low surrogate", `{"v":"x\udc00y"}`, `invalid JSON: lone surrogate \udc00 in a string (line 1, column 8)`},
		{"two lone surrogates as names", `{"\ud800":1,"\udc00":2}`, `invalid JSON: lone surrogate \ud800 in a string (line 1, column 3)`},
		{"high surrogate then high", `{"v":"\ud800\ud800"}`, `invalid JSON: lone surrogate \ud800 in a string (line 1, column 7)`},
		{"lone surrogate in a scalar", `"\udfff"`, `invalid JSON: lone surrogate \udfff in a string (line 1, column 2)`},
		{"invalid UTF-8", "{\"v\":\"a\xffb\"}", `invalid JSON: invalid UTF-8 in a string (line 1, column 8)`},
		{"too deep", deep(MaxDataDepth + 1), `invalid JSON: nested deeper than 256 levels (line 1, column 1281)`},
		{"too deep in prose", "Here:\n" + deep(MaxDataDepth+1), `invalid JSON: nested deeper than 256 levels (line 2, column 1281)`},
		{"too deep arrays", strings.Repeat("[", 5_000_000) + strings.Repeat("]", 5_000_000), `invalid JSON: nested deeper than 256 levels (line 1, column 257)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, _, err := ParseAnswer(c.text)
			if err == nil || err.Error() != c.want || !errors.Is(err, ErrInvalidJSON) {
				t.Fatalf("got %q, %v; want %q", doc, err, c.want)
			}
			// The validator reads a document under the same rules.
			if !strings.HasPrefix(c.name, "duplicate name in prose") && !strings.HasPrefix(c.name, "too deep in prose") {
				if err := anything.Validate([]byte(c.text)); err == nil || err.Error() != c.want {
					t.Errorf("Validate: %v, want %q", err, c.want)
				}
			}
		})
	}
}

// What the refusals leave alone: a surrogate pair, names that differ, data exactly
// MaxDataDepth deep, and numbers of any size, kept as written.
func TestParseAnswerAccepts(t *testing.T) {
	deep := strings.Repeat(`{"a":`, MaxDataDepth-1) + "[]" + strings.Repeat("}", MaxDataDepth-1)
	for _, text := range []string{
		`{"v":"\ud83d\ude00","w":"\uD83D\uDE00"}`,
		`{"a":1,"A":2,"a ":3,"b":{"a":4}}`,
		`[{"a":1},{"a":2}]`,
		deep,
		strings.Repeat("[", MaxDataDepth) + strings.Repeat("]", MaxDataDepth),
		`{"v":2e309}`, `{"v":-1e400}`, `{"v":1e-400}`, `{"v":123456789012345678901234567890}`, `2e309`,
		"{\"v\":\"\u00e9\u4e2d\"}",
	} {
		doc, extracted, err := ParseAnswer(" " + text + "\n")
		if err != nil || extracted || string(doc) != text {
			t.Errorf("%.60s: got %.60q %v %v", text, doc, extracted, err)
		}
		doc, extracted, err = ParseAnswer("Here it is: " + text)
		if text[0] == '{' && (err != nil || !extracted || string(doc) != text) {
			t.Errorf("in prose %.60s: got %.60q %v %v", text, doc, extracted, err)
		}
	}
}

// BenchmarkParseAnswerDeepUnterminated: prose and then a deep object that never closes
// (the case of issue 8), and the same with a closing code fence after it; the time per
// byte stays the same from 200 KB to 600 KB.
func BenchmarkParseAnswerDeepUnterminated(b *testing.B) {
	for _, tail := range []string{"", "\n```"} {
		for _, size := range []int{200_000, 600_000} {
			text := "Here is my answer: " + strings.Repeat(`{"a":`, size/5) + tail
			name := fmt.Sprintf("%dKB", size/1000)
			if tail != "" {
				name += "-fenced"
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					if _, _, err := ParseAnswer(text); err == nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
