package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
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

// FuzzParseAnswer: an accepted answer is exactly one JSON value, found in the text as
// ParseAnswer's contract says, without duplicate member names and within MaxDataDepth; and
// reading any answer takes time linear in its length.
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "x {\"a\":{}}", "```json\n{}\n```", `{"a":1}}`, `[1] {}`, `2 {"a":1}`, `{"a":{"b":1}`,
		`{"v":"x","v":1}`, `ok {"\ud800":1,"\udc00":2}`, `{"a":"\ud83d\ude00"}`, `{"v":2e309}`, "Here: " + strings.Repeat(`{"a":`, 300),
		strings.Repeat("[", 257) + strings.Repeat("]", 257), `x {"{":{"a":"}"}}`, "\"a {\\\"b\\\":1}\"", `"\udfff"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		doc, extracted, steps, err := parseAnswer(text)
		if steps > 4*len(text)+100 {
			t.Fatalf("%q: %d steps for %d bytes", text, steps, len(text))
		}
		if err != nil {
			return
		}
		trimmed := strings.TrimSpace(text)
		switch {
		case !extracted && string(doc) != trimmed:
			t.Fatalf("%q: accepted %q, not the whole answer", text, doc)
		case extracted && (doc[0] != '{' || !strings.HasSuffix(trimmed, string(doc)) || len(doc) == len(trimmed)):
			t.Fatalf("%q: extracted %q, not an object that ends prose", text, doc)
		}
		if err := checkAccepted(doc); err != nil {
			t.Fatalf("%q: accepted %q: %v", text, doc, err)
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

// checkAccepted checks with encoding/json what ParseAnswer promises of a document: one
// valid value, member names distinct once decoded, nesting within MaxDataDepth.
func checkAccepted(doc []byte) error {
	if !json.Valid(doc) {
		return errors.New("not JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	type level struct {
		obj   bool
		names map[string]bool
		key   bool // the next string of an object is a name
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if top != nil && top.obj {
				top.key = true
			}
			stack = append(stack, &level{obj: tok == json.Delim('{'), names: map[string]bool{}, key: true})
			if len(stack) > MaxDataDepth {
				return errors.New("too deep")
			}
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			continue
		}
		if top != nil && top.obj {
			if top.key {
				name := tok.(string)
				if top.names[name] {
					return errors.New("duplicate name " + name)
				}
				top.names[name] = true
			}
			top.key = !top.key
		}
	}
}

// FuzzParseJSON: the schema tree parser and the answer scanner agree with encoding/json on
// what is JSON, except for their documented refusals; and the tree says what the document
// says.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[1,2.5e-3,-0,"a\u00e9\ud83d\ude00",true,false,null]`, `{"a":1,"a":2}`, `{"\ud800":1,"\udc00":2}`,
		" {\"a\" : [ ] } \n", `{"a":1,}`, `[01]`, `[1.]`, `"\x"`, "\"\xff\"", `2e309`, strings.Repeat("[", 129) + strings.Repeat("]", 129),
		strings.Repeat("[", 257) + strings.Repeat("]", 257), `{"a":"b"} x`, "", `"\ud800\ud800"`, `[tru]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		valid := json.Valid(data)
		v, err := parseJSON(data)
		switch {
		case err == nil && !valid:
			t.Fatalf("%q: the tree parser accepts what encoding/json refuses", data)
		case err != nil && valid && !errors.Is(err, ErrTooLarge):
			t.Fatalf("%q: the tree parser refuses valid JSON: %v", data, err)
		case err == nil:
			var want, got any
			if err := decodeNumbers(data, &want); err != nil {
				t.Fatal(err)
			}
			if err := decodeNumbers(appendJSON(nil, v), &got); err != nil {
				t.Fatalf("%q: the tree writes %q: %v", data, appendJSON(nil, v), err)
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("%q: the tree reads %#v, encoding/json %#v", data, got, want)
			}
		}

		t2 := strings.TrimLeft(string(data), " \t\r\n")
		if t2 == "" {
			return
		}
		sc := answerScanner(t2)
		end, serr := sc.Value(0)
		whole := serr == nil && strings.TrimLeft(t2[end:], " \t\r\n") == ""
		switch {
		case whole && !valid:
			t.Fatalf("%q: the answer scanner accepts what encoding/json refuses", data)
		case !whole && valid && serr == nil:
			t.Fatalf("%q: the answer scanner stops at %d in valid JSON", data, end)
		case !whole && valid && !serr.Refused:
			t.Fatalf("%q: the answer scanner refuses valid JSON: %v", data, serr)
		case whole && checkAccepted([]byte(t2)) != nil:
			t.Fatalf("%q: the answer scanner accepts it: %v", data, checkAccepted([]byte(t2)))
		}
	})
}

func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}
