package schema

import (
	"encoding/json"
	"testing"
)

// FuzzCheckStrict: a schema with no violation compiles, and what Synthesize builds for it
// validates.
func FuzzCheckStrict(f *testing.F) {
	for _, s := range []string{reviewSchema, obj("a"), wrap(`{"type":["string","null"],"pattern":"^a+$"}`),
		wrap(`{"type":"integer","exclusiveMinimum":2,"multipleOf":3}`), wrap(`{"anyOf":[{"type":"number","maximum":-1},{"type":"null"}]}`),
		`{"type":"object","properties":{"r":{"$ref":"#/$defs/n"}},"required":["r"],"additionalProperties":false,"$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"}}}}`,
		`[]`, `{"type":"object"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		vs, err := CheckStrict(data)
		if err != nil || len(vs) > 0 {
			return
		}
		v, err := Compile(data)
		if err != nil {
			t.Fatalf("strict schema does not compile: %v\n%s", err, data)
		}
		doc, err := Synthesize(data)
		if err != nil {
			return // unsatisfiable patterns and bounds are allowed
		}
		if err := v.Validate(doc); err != nil {
			t.Fatalf("synthesized %s does not validate: %v\nschema %s", doc, err, data)
		}
	})
}

// FuzzParseAnswer: an accepted answer is one JSON object or value, found in the text.
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "x {\"a\":{}}", "```json\n{}\n```", `{"a":1}}`, `[1] {}`, `2 {"a":1}`, `{"a":{"b":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		doc, extracted, err := ParseAnswer(text)
		if err != nil {
			return
		}
		if !json.Valid(doc) {
			t.Fatalf("%q: accepted %q, not JSON", text, doc)
		}
		if extracted && doc[0] != '{' {
			t.Fatalf("%q: extracted %q, not an object", text, doc)
		}
	})
}
