package schema

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestSynthesizeRoundTrip: whatever Synthesize builds, the validator accepts.
func TestSynthesizeRoundTrip(t *testing.T) {
	cases := map[string]string{
		"review":        reviewSchema,
		"empty object":  `{"type":"object","properties":{},"required":[],"additionalProperties":false}`,
		"strings":       obj("a", "b", "c"),
		"nullable":      wrap(`{"type":["null","string"]}`),
		"only null":     wrap(`{"type":"null"}`),
		"boolean":       wrap(`{"type":"boolean"}`),
		"enum":          wrap(`{"type":"string","enum":["x","y"]}`),
		"const object":  wrap(`{"const":{"k":[1,2]}}`),
		"anyOf":         wrap(`{"anyOf":[{"type":"integer","minimum":5},{"type":"null"}]}`),
		"array bounds":  wrap(`{"type":"array","items":{"type":"string"},"minItems":3,"maxItems":4}`),
		"array max 0":   wrap(`{"type":"array","items":{"type":"string"},"maxItems":0}`),
		"nested arrays": wrap(`{"type":"array","items":{"type":"array","items":` + obj("a") + `}}`),
		"formats": `{"type":"object","properties":{"dt":{"type":"string","format":"date-time"},"d":{"type":"string","format":"date"},
			"e":{"type":"string","format":"email"},"u":{"type":"string","format":"uri"},"id":{"type":"string","format":"uuid"}},
			"required":["dt","d","e","u","id"],"additionalProperties":false}`,
		"patterns": `{"type":"object","properties":{"a":{"type":"string","pattern":"^[A-Z]{3}-\\d{2,4}$"},
			"b":{"type":"string","pattern":"^(foo|bar)+baz?$"},"c":{"type":"string","pattern":"^[^a-z]+$"},
			"d":{"type":"string","pattern":"[0-9a-f]{8}"},"e":{"type":"string","pattern":"^\\S+@\\S+\\.\\w+$"},
			"f":{"type":"string","format":"date","pattern":"^\\d{4}-\\d{2}-\\d{2}$"}},
			"required":["a","b","c","d","e","f"],"additionalProperties":false}`,
		"numbers": `{"type":"object","properties":{
			"a":{"type":"integer","minimum":3},"b":{"type":"integer","maximum":-3},
			"c":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1},"d":{"type":"integer","exclusiveMinimum":1.5},
			"e":{"type":"number","multipleOf":0.1,"minimum":0.25},"f":{"type":"integer","multipleOf":7,"minimum":100,"maximum":120},
			"g":{"type":"number","minimum":-1e9,"maximum":-1e9},"h":{"type":"integer","multipleOf":0.5,"exclusiveMinimum":1},
			"i":{"type":"number","exclusiveMaximum":-0.5}},
			"required":["a","b","c","d","e","f","g","h","i"],"additionalProperties":false}`,
		"recursive": `{"type":"object","properties":{"root":{"$ref":"#/$defs/node"}},"required":["root"],"additionalProperties":false,
			"$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},
			"required":["name","children"],"additionalProperties":false}}}`,
		"recursive nullable": `{"type":"object","properties":{"list":{"$ref":"#/$defs/cell"}},"required":["list"],"additionalProperties":false,
			"$defs":{"cell":{"type":"object","properties":{"v":{"type":"integer"},"next":{"anyOf":[{"$ref":"#/$defs/cell"},{"type":"null"}]}},
			"required":["v","next"],"additionalProperties":false}}}`,
		"keyword-named properties": `{"type":"object","properties":{"type":{"type":"string","enum":["a"]},"properties":{"type":"integer"}},
			"required":["type","properties"],"additionalProperties":false}`,
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			if vs, _ := CheckStrict([]byte(s)); len(vs) != 0 {
				t.Fatalf("test schema is not strict: %v", vs)
			}
			doc, err := Synthesize([]byte(s))
			if err != nil {
				t.Fatal(err)
			}
			v, err := Compile([]byte(s))
			if err != nil {
				t.Fatal(err)
			}
			if err := v.Validate(doc); err != nil {
				t.Errorf("%s: %v", doc, err)
			}
			again, _ := Synthesize([]byte(s))
			if !bytes.Equal(doc, again) {
				t.Errorf("not deterministic: %s then %s", doc, again)
			}
		})
	}
}

func TestSynthesizeValues(t *testing.T) {
	cases := []struct {
		name, schema, want string
	}{
		{"object in schema order", `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"},"m":{"type":"boolean"}},
			"required":["z","a","m"],"additionalProperties":false}`, `{"z":"<z>","a":0,"m":false}`},
		{"first non-null type", wrap(`{"type":["null","integer"]}`), `{"x":0}`},
		{"first enum value", wrap(`{"type":"string","enum":["b","a"]}`), `{"x":"b"}`},
		{"const", wrap(`{"const":"fixed"}`), `{"x":"fixed"}`},
		{"one item by default", wrap(`{"type":"array","items":{"type":"string"}}`), `{"x":["<x>"]}`},
		{"minItems items", wrap(`{"type":"array","items":{"type":"boolean"},"minItems":2}`), `{"x":[false,false]}`},
		{"first anyOf branch", wrap(`{"anyOf":[{"type":"string","format":"date"},{"type":"null"}]}`), `{"x":"2000-01-01"}`},
		{"uuid", wrap(`{"type":"string","format":"uuid"}`), `{"x":"00000000-0000-4000-8000-000000000000"}`},
		{"pattern", wrap(`{"type":"string","pattern":"^[A-Z]{2}\\d+$"}`), `{"x":"AA0"}`},
		{"minimum", wrap(`{"type":"integer","minimum":7}`), `{"x":7}`},
		{"exclusive", wrap(`{"type":"integer","exclusiveMinimum":7}`), `{"x":8}`},
		{"zero when allowed", wrap(`{"type":"number","minimum":-5,"maximum":5}`), `{"x":0}`},
		{"recursion ends at an empty array", `{"type":"object","properties":{"root":{"$ref":"#/$defs/node"}},"required":["root"],"additionalProperties":false,
			"$defs":{"node":{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},
			"required":["children"],"additionalProperties":false}}}`, `{"root":{"children":[]}}`},
		{"recursion ends at null", `{"type":"object","properties":{"c":{"$ref":"#/$defs/cell"}},"required":["c"],"additionalProperties":false,
			"$defs":{"cell":{"type":"object","properties":{"next":{"anyOf":[{"$ref":"#/$defs/cell"},{"type":"null"}]}},
			"required":["next"],"additionalProperties":false}}}`, `{"c":{"next":null}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := Synthesize([]byte(c.schema))
			if err != nil {
				t.Fatal(err)
			}
			if string(doc) != c.want {
				t.Errorf("got %s, want %s", doc, c.want)
			}
		})
	}
}

func TestSynthesizeErrors(t *testing.T) {
	cases := []struct {
		name, schema, want string
	}{
		{"not JSON", `{`, "not a single JSON value"},
		{"unmatchable pattern", wrap(`{"type":"string","pattern":"x^"}`), "/properties/x/pattern: no sample string matches"},
		{"no integer in bounds", wrap(`{"type":"integer","exclusiveMinimum":1,"exclusiveMaximum":2}`), "/properties/x: no integer meets"},
		{"endless recursion", `{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}},"required":["n"],"additionalProperties":false,
			"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}},"required":["next"],"additionalProperties":false}}}`,
			`/$defs/n/properties/next/$ref: recursion through "#/$defs/n" has no end here`},
		{"missing def", wrap(`{"$ref":"#/$defs/none"}`), "does not resolve"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Synthesize([]byte(c.schema))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// The schemas of issue 8 and their kin: Synthesize ends quickly, within MaxSynthSize, and
// either builds an instance that validates or says which pointer it cannot satisfy.
func TestSynthesizeBounded(t *testing.T) {
	nested := wrap(`{"type":"array","minItems":1000,"items":{"type":"array","minItems":1000,"items":{"type":"integer"}}}`)
	cases := []struct {
		name, schema, doc, err string
	}{
		{"huge minimum, multipleOf 1", wrap(`{"type":"number","minimum":1e20,"multipleOf":1}`), `{"x":1e20}`, ""},
		{"huge maximum, multipleOf 3", wrap(`{"type":"integer","maximum":-1e20,"multipleOf":3}`), `{"x":-100000000000000000002}`, ""},
		{"2^31 items", wrap(`{"type":"array","items":{"type":"integer"},"minItems":2147483647}`), "",
			"synthesize: /properties/x/minItems: 2147483647 items of 2 bytes each make an instance larger than 1048576 bytes"},
		{"nested minItems multiply", nested, "",
			"synthesize: /properties/x/minItems: 1000 items of 2002 bytes each make an instance larger than 1048576 bytes"},
		{"many large properties", `{"type":"object","properties":{` + largeProps(3) + `},"required":["a0","a1","a2"],"additionalProperties":false}`, "",
			"synthesize: (root): the instance would be larger than 1048576 bytes"},
		{"tiny multipleOf", wrap(`{"type":"number","minimum":1e300,"multipleOf":1e-300}`), `{"x":1e300}`, ""},
		{"no multiple between the bounds", wrap(`{"type":"number","exclusiveMinimum":1,"exclusiveMaximum":2,"multipleOf":0.5}`), `{"x":1.5}`, ""},
		{"no integer multiple between the bounds", wrap(`{"type":"integer","exclusiveMinimum":1,"exclusiveMaximum":2,"multipleOf":0.5}`), "",
			"synthesize: /properties/x: no integer meets the bounds and multipleOf"},
		{"huge multipleOf", wrap(`{"type":"number","minimum":1,"multipleOf":1e308}`), `{"x":1e308}`, ""},
		{"no float between the bounds", wrap(`{"type":"number","exclusiveMinimum":1,"exclusiveMaximum":1.0000000000000002}`), "",
			"synthesize: /properties/x: no number meets the bounds and multipleOf"},
		{"enum's first value of another type", wrap(`{"type":"string","enum":[1,"a"]}`), "",
			"synthesize: the instance built does not validate: /x: expected string, got 1"},
		{"const against a bound", wrap(`{"const":5,"type":"integer","maximum":3}`), "",
			"synthesize: the instance built does not validate: /x: must be at most 3"},
		{"pattern nothing matches", wrap(`{"type":"string","pattern":"\\bx\\B\\b"}`), "",
			`synthesize: /properties/x/pattern: no sample string matches the pattern "\\bx\\B\\b"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := Synthesize([]byte(c.schema))
			switch {
			case c.err == "" && (err != nil || string(doc) != c.doc):
				t.Fatalf("got %s, %v; want %s", doc, err, c.doc)
			case c.err != "" && (err == nil || err.Error() != c.err):
				t.Fatalf("got %.80s, %v; want the error %q", doc, err, c.err)
			}
		})
	}
}

// largeProps defines n required properties, each an array of 200,000 integers.
func largeProps(n int) string {
	var props []string
	for i := range n {
		props = append(props, fmt.Sprintf(`"a%d":{"type":"array","items":{"type":"integer"},"minItems":200000}`, i))
	}
	return strings.Join(props, ",")
}
