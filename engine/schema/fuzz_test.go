package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzCheckStrict: CheckStrict fails only on what is not one JSON value within the limits
// of a schema document; a schema with no violation compiles, and what Synthesize builds for
// it validates.
func FuzzCheckStrict(f *testing.F) {
	for _, s := range []string{reviewSchema, obj("a"), wrap(`{"type":["string","null"],"pattern":"^a+$"}`),
		wrap(`{"type":"integer","exclusiveMinimum":2,"multipleOf":3}`), wrap(`{"anyOf":[{"type":"number","maximum":-1},{"type":"null"}]}`),
		`{"type":"object","properties":{"r":{"$ref":"#/$defs/n"}},"required":["r"],"additionalProperties":false,"$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"}}}}`,
		wrap(`{"type":"number","minimum":1e20,"multipleOf":1}`), wrap(`{"type":"array","items":{"type":"integer"},"minItems":2147483647}`),
		wrap(`{"type":"string","enum":[1,"a"]}`), wrap(`{"type":"number","minimum":2e309}`),
		`[]`, `{"type":"object"}`, strings.Repeat("[", 200)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		vs, err := CheckStrict(data)
		if err != nil {
			if !errors.Is(err, ErrNotJSON) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("CheckStrict: %v", err)
			}
			return
		}
		if len(vs) > 0 {
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
		if len(doc) > MaxSynthSize {
			t.Fatalf("synthesized %d bytes", len(doc))
		}
		if err := v.Validate(doc); err != nil {
			t.Fatalf("synthesized %s does not validate: %v\nschema %s", doc, err, data)
		}
	})
}

// FuzzValidate: any schema and any document end in a verdict, never a panic or a stack
// overflow; a schema the strict rules accept compiles; the verdict is the same when asked
// again, and an invalid document is told why.
func FuzzValidate(f *testing.F) {
	seeds := []struct{ schema, doc string }{
		{obj("a", "b"), `{"a":"x","c":1}`},
		{wrapV(`{"type":"integer","maximum":12345678901234567890}`), `{"v":12345678901234567891}`},
		{wrapV(`{"type":"integer","multipleOf":0.5}`), `{"v":1e308}`},
		{wrapV(`{"type":"integer"}`), `{"v":1e-400}`},
		{wrapV(`{"type":"number","multipleOf":0.0016}`), `{"v":1e1000000}`},
		{wrapV(`{"anyOf":[{"type":"string","pattern":"^a+$"},{"type":"null"}]}`), `{"v":"aab"}`},
		{wrapV(`{"enum":[1,"a",{"b":[null]}]}`), `{"v":{"b":[null]}}`},
		{`{"type":"object","properties":{"v":{"$ref":"#/$defs/n"}},"required":["v"],"additionalProperties":false,"$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"}}}}`,
			`{"v":[[[[]]],[]]}`},
		{`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"required":["a"],"additionalProperties":false,"$defs":{"x":{"anyOf":[{"$ref":"#/$defs/x"},{"type":"null"}]}}}`,
			`{"a":null}`},
		{wrapV(`{"type":"array","minItems":1,"maxItems":2,"items":{"const":1.0}}`), `{"v":[1,1e0,10e-1]}`},
		{wrapV(`{"type":"string"}`), `{"v":"x","v":"y"}`},
	}
	for _, s := range seeds {
		// Short and compact: the fuzzer minimizes what it finds byte by byte, for up to a
		// minute on an input of a kilobyte.
		var schema, doc bytes.Buffer
		if err := json.Compact(&schema, []byte(s.schema)); err != nil {
			f.Fatal(err)
		}
		if err := json.Compact(&doc, []byte(s.doc)); err != nil {
			f.Fatal(err)
		}
		f.Add(schema.Bytes(), doc.Bytes())
	}
	f.Fuzz(func(t *testing.T, schema, doc []byte) {
		vs, strictErr := CheckStrict(schema)
		v, err := Compile(schema)
		if strictErr == nil && len(vs) == 0 && err != nil {
			t.Fatalf("a strict schema does not compile: %v\n%s", err, schema)
		}
		if err != nil {
			return
		}
		first := v.Validate(doc)
		again := v.Validate(doc)
		agreesWithAnswer(t, v, string(doc))
		if (first == nil) != (again == nil) || (first != nil && first.Error() != again.Error()) {
			t.Fatalf("two verdicts: %v, then %v\nschema %s\ndoc %s", first, again, schema, doc)
		}
		var ve *ValidationError
		if errors.As(first, &ve) {
			if len(ve.Problems) == 0 || ve.Problems[0].Keyword == "schema" {
				t.Fatalf("invalid without a reason: %v\nschema %s\ndoc %s", first, schema, doc)
			}
			for _, p := range ve.Problems {
				if p.Keyword == "" {
					t.Fatalf("a problem without its keyword: %+v", p)
				}
			}
		}
	})
}

// agreesWithAnswer checks that Validator.Answer reads text as ParseAnswer, Validate and
// json.Compact do one after the other.
func agreesWithAnswer(t *testing.T, v *Validator, text string) {
	t.Helper()
	want, wantExtracted, wantErr := ParseAnswer(text)
	if wantErr == nil {
		wantErr = v.Validate(want)
	}
	var compact bytes.Buffer
	if wantErr == nil {
		if err := json.Compact(&compact, want); err != nil {
			t.Fatalf("%q: json.Compact: %v", text, err)
		}
	}
	got, extracted, err := v.Answer(text)
	switch {
	case (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()):
		t.Fatalf("%q: Answer's error %v, want %v", text, err, wantErr)
	case err == nil && (string(got) != compact.String() || extracted != wantExtracted):
		t.Fatalf("%q: Answer = %s, %v; want %s, %v", text, got, extracted, compact.String(), wantExtracted)
	}
}
