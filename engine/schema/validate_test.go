package schema

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

const reviewSchema = `{
	"type": "object",
	"properties": {
		"verdict": {"type": "string", "enum": ["approve", "request_changes"]},
		"score": {"type": "integer", "minimum": 0, "maximum": 10},
		"ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "multipleOf": 0.25},
		"tag": {"type": "string", "pattern": "^[a-z]+$"},
		"kind": {"const": "review"},
		"findings": {
			"type": "array", "minItems": 1, "maxItems": 2,
			"items": {
				"type": "object",
				"properties": {
					"title": {"type": "string"},
					"line": {"type": ["integer", "null"]},
					"where": {"anyOf": [{"$ref": "#/$defs/loc"}, {"type": "null"}]}
				},
				"required": ["title", "line", "where"],
				"additionalProperties": false
			}
		}
	},
	"required": ["verdict", "score", "ratio", "tag", "kind", "findings"],
	"additionalProperties": false,
	"$defs": {
		"loc": {
			"type": "object",
			"properties": {"file": {"type": "string"}, "line": {"type": "integer"}},
			"required": ["file", "line"],
			"additionalProperties": false
		}
	}
}`

const validReview = `{"verdict":"approve","score":3,"ratio":0.5,"tag":"ok","kind":"review",
	"findings":[{"title":"t","line":null,"where":{"file":"a.go","line":3}}]}`

// review returns validReview with one field replaced.
func review(field, val string) string {
	m := map[string]string{
		"verdict": `"approve"`, "score": `3`, "ratio": `0.5`, "tag": `"ok"`, "kind": `"review"`,
		"findings": `[{"title":"t","line":null,"where":{"file":"a.go","line":3}}]`,
	}
	if val == "" {
		delete(m, field)
	} else {
		m[field] = val
	}
	var parts []string
	for _, k := range []string{"verdict", "score", "ratio", "tag", "kind", "findings", "extra"} {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%q:%s", k, v))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func TestValidate(t *testing.T) {
	v, err := Compile([]byte(reviewSchema))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate([]byte(validReview)); err != nil {
		t.Fatalf("valid document: %v", err)
	}
	if err := v.Validate([]byte(review("findings", `[{"title":"t","line":4,"where":null},{"title":"u","line":null,"where":null}]`))); err != nil {
		t.Fatalf("valid document with nulls: %v", err)
	}
	cases := []struct {
		name string
		doc  string
		want []Problem
	}{
		{"wrong type", review("score", `"3"`), []Problem{{Path: "/score", Keyword: "type", Message: `expected integer, got "3"`}}},
		{"not an integer", review("score", `2.5`), []Problem{{Path: "/score", Keyword: "type", Message: "expected integer, got 2.5"}}},
		{"enum", review("verdict", `"maybe"`), []Problem{{Path: "/verdict", Keyword: "enum", Message: `must be one of "approve", "request_changes"`}}},
		{"const", review("kind", `"other"`), []Problem{{Path: "/kind", Keyword: "const", Message: `must be "review"`}}},
		{"minimum", review("score", `-1`), []Problem{{Path: "/score", Keyword: "minimum", Message: "must be at least 0"}}},
		{"maximum", review("score", `11`), []Problem{{Path: "/score", Keyword: "maximum", Message: "must be at most 10"}}},
		{"exclusiveMinimum", review("ratio", `0`), []Problem{{Path: "/ratio", Keyword: "exclusiveMinimum", Message: "must be greater than 0"}}},
		{"exclusiveMaximum", review("ratio", `1`), []Problem{{Path: "/ratio", Keyword: "exclusiveMaximum", Message: "must be less than 1"}}},
		{"multipleOf", review("ratio", `0.3`), []Problem{{Path: "/ratio", Keyword: "multipleOf", Message: "must be a multiple of 0.25"}}},
		{"pattern", review("tag", `"Not OK"`), []Problem{{Path: "/tag", Keyword: "pattern", Message: `"Not OK" does not match the pattern "^[a-z]+$"`}}},
		{"missing", review("tag", ""), []Problem{{Path: "", Keyword: "required", Message: `missing required property "tag"`}}},
		{"unexpected", review("extra", `1`), []Problem{{Path: "", Keyword: "additionalProperties", Message: `unexpected property "extra"`}}},
		{"minItems", review("findings", `[]`), []Problem{{Path: "/findings", Keyword: "minItems", Message: "must have at least 1 item, has 0"}}},
		{"maxItems", review("findings", `[{"title":"a","line":1,"where":null},{"title":"b","line":1,"where":null},{"title":"c","line":1,"where":null}]`),
			[]Problem{{Path: "/findings", Keyword: "maxItems", Message: "must have at most 2 items, has 3"}}},
		{"nested", review("findings", `[{"title":"a","line":1,"where":null},{"title":5,"line":"x","where":null,"more":1}]`),
			[]Problem{
				{Path: "/findings/1", Keyword: "additionalProperties", Message: `unexpected property "more"`},
				{Path: "/findings/1/line", Keyword: "type", Message: `expected integer or null, got "x"`},
				{Path: "/findings/1/title", Keyword: "type", Message: "expected string, got 5"},
			}},
		{"through anyOf and ref", review("findings", `[{"title":"a","line":1,"where":{"file":"a.go"}}]`),
			[]Problem{{Path: "/findings/0/where", Keyword: "required", Message: `missing required property "line"`}}},
		{"anyOf no branch fits", review("findings", `[{"title":"a","line":1,"where":"a.go:3"}]`),
			[]Problem{{Path: "/findings/0/where", Keyword: "type", Message: `expected object or null, got "a.go:3"`}}},
		{"root not an object", `[1]`, []Problem{{Path: "", Keyword: "type", Message: "expected object, got an array"}}},
		{"several", `{"verdict":1,"kind":"review"}`, []Problem{
			{Path: "", Keyword: "required", Message: `missing required property "score"`},
			{Path: "", Keyword: "required", Message: `missing required property "ratio"`},
			{Path: "", Keyword: "required", Message: `missing required property "tag"`},
			{Path: "", Keyword: "required", Message: `missing required property "findings"`},
			{Path: "/verdict", Keyword: "type", Message: "expected string, got 1"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := v.Validate([]byte(c.doc))
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate = %v, want a *ValidationError", err)
			}
			// Want is Brief's, which TestBriefSaysWhatAKeywordWants checks.
			got := slices.Clone(ve.Problems)
			for i := range got {
				got[i].Want = ""
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("problems:\n got  %+v\n want %+v", got, c.want)
			}
		})
	}
}

func TestValidateNotOneDocument(t *testing.T) {
	v, err := Compile([]byte(obj("a")))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]error{
		``:                   ErrNoJSON,
		`{"a":"x"} {}`:       ErrMultiple,
		`{"a":"x"}}`:         ErrTextAfter,
		`{"a":"x"} trailing`: ErrTextAfter,
		`{"a":`:              ErrInvalidJSON,
		`{"a":"x","a":"y"}`:  ErrInvalidJSON,
		`{"a":"x","b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"b":2}`: ErrInvalidJSON,
		// Two lone surrogates that both read as U+FFFD are one name twice.
		`{"a":"x","\ud800":1,"\udbff":2}`: ErrInvalidJSON,
	}
	for doc, want := range cases {
		if err := v.Validate([]byte(doc)); !errors.Is(err, want) {
			t.Errorf("%q: %v, want %v", doc, err, want)
		}
	}
	if err := v.Validate([]byte("\n {\"a\":\"x\"}\n")); err != nil {
		t.Errorf("surrounding whitespace: %v", err)
	}
}

// TestBriefSaysWhatAKeywordWants: a value of the wrong type, or past a bound, is said with the
// types and bounds the schema wants and the value's JSON type, never the value itself.
func TestBriefSaysWhatAKeywordWants(t *testing.T) {
	v, err := Compile([]byte(`{"type":"object","properties":{"limit":{"type":"integer","minimum":1,"maximum":10},` +
		`"run":{"type":["string","null"]},"tags":{"type":"array","items":{"type":"string"}}},` +
		`"required":["limit","run","tags"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		`{"limit":"ten","run":null,"tags":[]}`:         `/limit: must be an integer, got a string`,
		`{"limit":1.5,"run":null,"tags":[]}`:           `/limit: must be an integer, got a number`,
		`{"limit":0,"run":null,"tags":[]}`:             `/limit: must be at least 1`,
		`{"limit":11,"run":"secret","tags":[]}`:        `/limit: must be at most 10`,
		`{"limit":1,"run":{"x":"secret"},"tags":[]}`:   `/run: must be a string or null, got an object`,
		`{"limit":1,"run":null,"tags":["a",true]}`:     `/tags/1: must be a string, got a boolean`,
		`{"limit":1,"run":null,"tags":[],"extra":"x"}`: `(root): fails "additionalProperties"`,
	}
	for doc, want := range cases {
		var ve *ValidationError
		if err := v.Validate([]byte(doc)); !errors.As(err, &ve) {
			t.Fatalf("%s: %v, want a *ValidationError", doc, err)
		}
		if got := ve.Brief(); got != want {
			t.Errorf("%s: Brief() = %q, want %q", doc, got, want)
		}
	}
}

func TestValidationErrorMessage(t *testing.T) {
	e := &ValidationError{Problems: []Problem{{Path: "", Keyword: "required", Message: "missing required property \"a\""}, {Path: "/b/0", Keyword: "type", Message: "expected string, got 1"}}}
	if got, want := e.Error(), `(root): missing required property "a"; /b/0: expected string, got 1`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := e.Brief(), `(root): fails "required"; /b/0: fails "type"`; got != want {
		t.Errorf("Brief() = %q, want %q", got, want)
	}
	e.Problems[1].Want = "must be a string, got an integer"
	if got, want := e.Brief(), `(root): fails "required"; /b/0: must be a string, got an integer`; got != want {
		t.Errorf("Brief() = %q, want %q", got, want)
	}
	var many ValidationError
	for i := range 13 {
		many.Problems = append(many.Problems, Problem{Path: fmt.Sprintf("/%d", i), Keyword: "type", Message: "bad"})
	}
	if got := many.Error(); !strings.HasSuffix(got, "/9: bad; and 3 more") {
		t.Errorf("Error() = %q", got)
	}
}

func TestValidateRecursive(t *testing.T) {
	s := `{"type":"object","properties":{"root":{"$ref":"#/$defs/node"}},"required":["root"],"additionalProperties":false,
		"$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},
		"required":["name","children"],"additionalProperties":false}}}`
	v, err := Compile([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate([]byte(`{"root":{"name":"a","children":[{"name":"b","children":[]}]}}`)); err != nil {
		t.Fatalf("valid tree: %v", err)
	}
	err = v.Validate([]byte(`{"root":{"name":"a","children":[{"name":"b","children":[{"name":2,"children":[]}]}]}}`))
	if err == nil || err.Error() != "/root/children/0/children/0/name: expected string, got 2" {
		t.Errorf("Validate = %v", err)
	}
}

// What the validator cannot validate, Compile refuses, naming where it is.
func TestCompileRefusesWhatItCannotValidate(t *testing.T) {
	cases := map[string]string{
		`{"type":"object","properties":{"a":{"type":"array","uniqueItems":true}}}`: `schema: /properties/a/uniqueItems: keyword "uniqueItems" is not supported`,
		`{"type":"object","properties":{"a":{"$ref":"#"}}}`:                        `schema: /properties/a/$ref: must be a local "#/$defs/<name>" reference to a definition of the root`,
		`{"type":"object","properties":{"a":{"multipleOf":0}}}`:                    `schema: /properties/a/multipleOf: must be greater than 0`,
		`{"type":"object","properties":{"a":{"maxItems":1.5}}}`:                    `schema: /properties/a/maxItems: must be a non-negative integer`,
		`{"type":"object","properties":{"a":{"minimum":1e9999999999999999}}}`:      `schema: /properties/a/minimum: the number is out of range`,
		`{"type":"object","$defs":{"x":{"$ref":"#/$defs/x"}}}`:                     `schema: /$defs/x/$ref: the $ref cycle #/$defs/x → #/$defs/x passes through no "properties" or "items"`,
	}
	for s, want := range cases {
		if _, err := Compile([]byte(s)); err == nil || err.Error() != want {
			t.Errorf("%s:\n got  %v\n want %s", s, err, want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, s := range []string{``, `{`, `{} {}`} {
		if _, err := Compile([]byte(s)); !errors.Is(err, ErrNotJSON) {
			t.Errorf("%q: %v, want ErrNotJSON", s, err)
		}
	}
	for _, s := range []string{`{"type":"string","pattern":"(a"}`, `{"type":5}`, `{"$ref":"#/$defs/missing"}`} {
		if _, err := Compile([]byte(s)); err == nil {
			t.Errorf("%s: compiled", s)
		}
	}
}

func TestValidateConcurrent(t *testing.T) {
	v, err := Compile([]byte(reviewSchema))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			doc := validReview
			if i%2 == 1 {
				doc = review("score", `"x"`)
			}
			for range 50 {
				if err := v.Validate([]byte(doc)); (err == nil) != (i%2 == 0) {
					t.Errorf("goroutine %d: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkValidate: one answer of the review schema, valid and invalid, as a call validates it.
func BenchmarkValidate(b *testing.B) {
	v, err := Compile([]byte(reviewSchema))
	if err != nil {
		b.Fatal(err)
	}
	for name, doc := range map[string]string{"valid": validReview, "invalid": review("findings", `[{"title":5,"line":"x","where":{"file":"a.go"}}]`)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = v.Validate([]byte(doc))
			}
		})
	}
}

// Answer reads a model's answer once: found as ParseAnswer finds it, validated, and given
// back as json.Compact writes it; its errors are ParseAnswer's, then Validate's.
func TestValidatorAnswer(t *testing.T) {
	v, err := Compile([]byte(wrapV(`{"type":"object","properties":{"s":{"type":"string"},"n":{"type":"array","items":{"type":"number"}}},"required":["s","n"],"additionalProperties":false}`)))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, text, doc string
		extracted       bool
		err             string
	}{
		{"compact", `{"v":{"s":"a b","n":[1,2e3]}}`, `{"v":{"s":"a b","n":[1,2e3]}}`, false, ""},
		{"spaced", "\n{ \"v\" :\t{\"s\": \" {\\\" } \",\r\n \"n\": [ 1 , -0.5 ] } }\n", `{"v":{"s":" {\" } ","n":[1,-0.5]}}`, false, ""},
		{"in prose", "Here it is:\n{\"v\": {\"s\": \"x\", \"n\": []}}", `{"v":{"s":"x","n":[]}}`, true, ""},
		{"invalid", `{"v":{"s":1,"n":["x"]}}`, "", false, `/v/n/0: expected number, got "x"; /v/s: expected string, got 1`},
		{"out of range", `{"v":{"s":"a","n":[1, 1e9999999999999999]}}`, "", false, `/v/n/1: a number whose exponent is beyond ±1000000000000000 is out of range`},
		{"not one document", `{"v":{"s":"a","n":[]}} {}`, "", false, "more than one JSON document"},
		{"fenced", "```json\n{\"v\":{}}\n```", "", false, "text after the JSON document (a closing code fence)"},
		{"duplicate name", `{"v":{"s":"a","s":"b","n":[]}}`, "", false, `invalid JSON: duplicate member name "s" (line 1, column 15)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, extracted, err := v.Answer(c.text)
			if c.err != "" {
				if err == nil || err.Error() != c.err || doc != nil {
					t.Fatalf("Answer = %s, %v; want the error %q", doc, err, c.err)
				}
				return
			}
			if err != nil || string(doc) != c.doc || extracted != c.extracted {
				t.Fatalf("Answer = %s, %v, %v; want %s, %v", doc, extracted, err, c.doc, c.extracted)
			}
		})
	}
}
