package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// wrap puts a property schema under a strict root, as property "x".
func wrap(prop string) string {
	return `{"type":"object","properties":{"x":` + prop + `},"required":["x"],"additionalProperties":false}`
}

// obj is a strict object schema with the given properties, each a string.
func obj(names ...string) string {
	var props, req []string
	for _, n := range names {
		props = append(props, fmt.Sprintf("%q:{\"type\":\"string\"}", n))
		req = append(req, fmt.Sprintf("%q", n))
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(req, ",") +
		`],"additionalProperties":false}`
}

// ptr is the pointer base/tok, tok escaped as RFC 6901 says.
func ptr(base, tok string) string {
	return base + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
}

// at is a violation's pointer and rule, what the tests compare.
type at struct{ pointer, rule string }

func check(t *testing.T, schema string) []at {
	t.Helper()
	vs, err := CheckStrict([]byte(schema))
	if err != nil {
		t.Fatalf("CheckStrict: %v", err)
	}
	out := []at{}
	for _, v := range vs {
		if v.Message == "" {
			t.Errorf("%s %s: empty message", v.Pointer, v.Rule)
		}
		out = append(out, at{v.Pointer, v.Rule})
	}
	return out
}

func TestCheckStrictAccepts(t *testing.T) {
	cases := map[string]string{
		"empty object":  `{"type":"object","properties":{},"required":[],"additionalProperties":false}`,
		"no properties": `{"type":"object","additionalProperties":false}`,
		"strings":       obj("a", "b"),
		"nullable":      wrap(`{"type":["string","null"]}`),
		"nullable object": wrap(`{"type":["object","null"],"properties":{"a":{"type":"integer"}},"required":["a"],
			"additionalProperties":false}`),
		"array of objects": wrap(`{"type":"array","items":` + obj("id") + `,"minItems":1,"maxItems":5}`),
		"enum and const":   wrap(`{"type":"object","properties":{"e":{"type":"string","enum":["a","b"]},"c":{"const":3}},"required":["e","c"],"additionalProperties":false}`),
		"enum with null":   wrap(`{"type":["string","null"],"enum":["a",null]}`),
		"anyOf":            wrap(`{"anyOf":[{"type":"string"},` + obj("a") + `,{"type":"null"}]}`),
		"defs and ref": `{"type":"object","properties":{"x":{"$ref":"#/$defs/item"}},"required":["x"],"additionalProperties":false,
			"$defs":{"item":` + obj("a") + `}}`,
		"ref name escaped": `{"type":"object","properties":{"x":{"$ref":"#/$defs/a~1b~0c"}},"required":["x"],"additionalProperties":false,
			"$defs":{"a/b~c":{"type":"string"}}}`,
		"recursive": `{"type":"object","properties":{"root":{"$ref":"#/$defs/node"}},"required":["root"],"additionalProperties":false,
			"$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},
			"required":["name","children"],"additionalProperties":false}}}`,
		"string constraints":  wrap(`{"type":"string","description":"d","pattern":"^[a-z]+$","format":"email"}`),
		"number constraints":  wrap(`{"type":"number","minimum":0,"maximum":10,"exclusiveMinimum":-1,"exclusiveMaximum":11,"multipleOf":0.5}`),
		"integer constraints": wrap(`{"type":"integer","minimum":-3,"maximum":3}`),
		"all types":           wrap(`{"type":["string","number","integer","boolean","array","null"],"items":{"type":"string"}}`),
		"keyword-named properties": `{"type":"object","properties":{"type":{"type":"string"},"properties":{"type":"string"},
			"oneOf":{"type":"string"},"required":{"type":"string"},"title":{"type":"string"},"$ref":{"type":"string"}},
			"required":["type","properties","oneOf","required","title","$ref"],"additionalProperties":false}`,
		"single-type array root": `{"type":["object"],"properties":{},"required":[],"additionalProperties":false}`,
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			if got := check(t, s); len(got) != 0 {
				t.Errorf("violations %v", got)
			}
			// A strict schema always compiles.
			if _, err := Compile([]byte(s)); err != nil {
				t.Errorf("Compile: %v", err)
			}
		})
	}
}

func TestCheckStrictRules(t *testing.T) {
	cases := []struct {
		name   string
		schema string
		want   []at
	}{
		// root_not_object
		{"root array", `[]`, []at{{"", RuleRootNotObject}}},
		{"root string", `"object"`, []at{{"", RuleRootNotObject}}},
		{"root without type", `{"properties":{},"required":[],"additionalProperties":false}`, []at{{"", RuleRootNotObject}}},
		{"root array type", `{"type":"array","items":{"type":"string"}}`, []at{{"", RuleRootNotObject}}},
		{"root nullable", `{"type":["object","null"],"properties":{},"required":[],"additionalProperties":false}`, []at{{"", RuleRootNotObject}}},
		{"root anyOf", `{"anyOf":[` + obj("a") + `]}`, []at{{"", RuleRootNotObject}}},

		// additional_properties
		{"root missing", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
			[]at{{"", RuleAdditionalProperties}}},
		{"true", `{"type":"object","properties":{},"required":[],"additionalProperties":true}`,
			[]at{{"/additionalProperties", RuleAdditionalProperties}}},
		{"schema", `{"type":"object","properties":{},"required":[],"additionalProperties":{"type":"string"}}`,
			[]at{{"/additionalProperties", RuleAdditionalProperties}}},
		{"nested items", wrap(`{"type":"array","items":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}`),
			[]at{{"/properties/x/items", RuleAdditionalProperties}}},
		{"properties without type", wrap(`{"properties":{"a":{"type":"string"}},"required":["a"]}`),
			[]at{{"/properties/x", RuleAdditionalProperties}}},
		{"nullable object", wrap(`{"type":["object","null"],"properties":{},"required":[]}`),
			[]at{{"/properties/x", RuleAdditionalProperties}}},
		{"in anyOf", wrap(`{"anyOf":[{"type":"object","properties":{},"required":[]},{"type":"null"}]}`),
			[]at{{"/properties/x/anyOf/0", RuleAdditionalProperties}}},
		{"in defs", `{"type":"object","properties":{},"required":[],"additionalProperties":false,"$defs":{"d":{"type":"object"}}}`,
			[]at{{"/$defs/d", RuleAdditionalProperties}}},

		// required
		{"not required", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`,
			[]at{{"/properties/b", RuleRequired}}},
		{"no required", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"additionalProperties":false}`,
			[]at{{"/properties/a", RuleRequired}, {"/properties/b", RuleRequired}}},
		{"unknown required", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","b"],"additionalProperties":false}`,
			[]at{{"/required/1", RuleRequired}}},
		{"required without properties", `{"type":"object","required":["a"],"additionalProperties":false}`,
			[]at{{"/required/0", RuleRequired}}},
		{"required twice", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","a"],"additionalProperties":false}`,
			[]at{{"/required/1", RuleRequired}}},
		{"nested not required", wrap(`{"type":"object","properties":{"a":{"type":"string"}},"required":[],"additionalProperties":false}`),
			[]at{{"/properties/x/properties/a", RuleRequired}}},

		// keyword
		{"oneOf", wrap(`{"oneOf":[{"type":"string"}]}`), []at{{"/properties/x/oneOf", RuleKeyword}}},
		{"title at root", `{"type":"object","title":"T","properties":{},"required":[],"additionalProperties":false}`,
			[]at{{"/title", RuleKeyword}}},
		{"two keywords", wrap(`{"type":"string","minLength":1,"default":"a"}`),
			[]at{{"/properties/x/minLength", RuleKeyword}, {"/properties/x/default", RuleKeyword}}},
		{"escaped pointer", wrap(`{"type":"string","x/y~z":1}`), []at{{"/properties/x/x~1y~0z", RuleKeyword}}},

		// depth: covered by TestCheckStrictDepth.

		// bad_ref
		{"definitions", `{"type":"object","properties":{"x":{"$ref":"#/definitions/a"}},"required":["x"],"additionalProperties":false,"$defs":{"a":{"type":"string"}}}`,
			[]at{{"/properties/x/$ref", RuleBadRef}}},
		{"missing def", `{"type":"object","properties":{"x":{"$ref":"#/$defs/b"}},"required":["x"],"additionalProperties":false,"$defs":{"a":{"type":"string"}}}`,
			[]at{{"/properties/x/$ref", RuleBadRef}}},
		{"no defs", wrap(`{"$ref":"#/$defs/a"}`), []at{{"/properties/x/$ref", RuleBadRef}}},
		{"root ref", wrap(`{"$ref":"#"}`), []at{{"/properties/x/$ref", RuleBadRef}}},
		{"remote ref", wrap(`{"$ref":"https://example.com/s.json"}`), []at{{"/properties/x/$ref", RuleBadRef}}},
		{"deep ref", `{"type":"object","properties":{"x":{"$ref":"#/$defs/a/properties/b"}},"required":["x"],"additionalProperties":false,"$defs":{"a":` + obj("b") + `}}`,
			[]at{{"/properties/x/$ref", RuleBadRef}}},
		{"ref not a string", wrap(`{"$ref":5}`), []at{{"/properties/x/$ref", RuleBadRef}}},

		// type
		{"unknown type", wrap(`{"type":"str"}`), []at{{"/properties/x/type", RuleType}}},
		{"empty type array", wrap(`{"type":[]}`), []at{{"/properties/x/type", RuleType}}},
		{"type twice", wrap(`{"type":["string","string"]}`), []at{{"/properties/x/type/1", RuleType}}},
		{"type number", wrap(`{"type":5}`), []at{{"/properties/x/type", RuleType}}},
		{"type element", wrap(`{"type":["string",true,"float"]}`), []at{{"/properties/x/type/1", RuleType}, {"/properties/x/type/2", RuleType}}},

		// invalid
		{"properties array", wrap(`{"type":"object","properties":[],"additionalProperties":false}`), []at{{"/properties/x/properties", RuleInvalid}}},
		{"required string", `{"type":"object","properties":{"a":{"type":"string"}},"required":"a","additionalProperties":false}`,
			[]at{{"/required", RuleInvalid}}},
		{"required element", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a",1],"additionalProperties":false}`,
			[]at{{"/required/1", RuleInvalid}}},
		{"schema true", wrap(`true`), []at{{"/properties/x", RuleInvalid}}},
		{"tuple items", wrap(`{"type":"array","items":[{"type":"string"}]}`), []at{{"/properties/x/items", RuleInvalid}}},
		{"items true", wrap(`{"type":"array","items":true}`), []at{{"/properties/x/items", RuleInvalid}}},
		{"empty enum", wrap(`{"type":"string","enum":[]}`), []at{{"/properties/x/enum", RuleInvalid}}},
		{"enum object", wrap(`{"type":"string","enum":{"a":1}}`), []at{{"/properties/x/enum", RuleInvalid}}},
		{"empty anyOf", wrap(`{"anyOf":[]}`), []at{{"/properties/x/anyOf", RuleInvalid}}},
		{"anyOf element", wrap(`{"anyOf":[{"type":"string"},"x"]}`), []at{{"/properties/x/anyOf/1", RuleInvalid}}},
		{"defs array", `{"type":"object","properties":{},"required":[],"additionalProperties":false,"$defs":[]}`, []at{{"/$defs", RuleInvalid}}},
		{"description number", wrap(`{"type":"string","description":1}`), []at{{"/properties/x/description", RuleInvalid}}},
		{"format number", wrap(`{"type":"string","format":1}`), []at{{"/properties/x/format", RuleInvalid}}},
		{"bad pattern", wrap(`{"type":"string","pattern":"(a"}`), []at{{"/properties/x/pattern", RuleInvalid}}},
		{"pattern number", wrap(`{"type":"string","pattern":1}`), []at{{"/properties/x/pattern", RuleInvalid}}},
		{"minimum string", wrap(`{"type":"number","minimum":"1"}`), []at{{"/properties/x/minimum", RuleInvalid}}},
		{"exclusiveMaximum bool", wrap(`{"type":"number","exclusiveMaximum":true}`), []at{{"/properties/x/exclusiveMaximum", RuleInvalid}}},
		{"multipleOf zero", wrap(`{"type":"number","multipleOf":0}`), []at{{"/properties/x/multipleOf", RuleInvalid}}},
		{"minItems negative", wrap(`{"type":"array","items":{"type":"string"},"minItems":-1}`), []at{{"/properties/x/minItems", RuleInvalid}}},
		{"maxItems fraction", wrap(`{"type":"array","items":{"type":"string"},"maxItems":1.5}`), []at{{"/properties/x/maxItems", RuleInvalid}}},
		{"minItems with exponent", wrap(`{"type":"array","items":{"type":"string"},"minItems":1e1}`), []at{{"/properties/x/minItems", RuleInvalid}}},
		{"minItems above maxItems", wrap(`{"type":"array","items":{"type":"string"},"minItems":3,"maxItems":2}`), []at{{"/properties/x/minItems", RuleInvalid}}},
		{"minimum above maximum", wrap(`{"type":"number","minimum":3,"maximum":2}`), []at{{"/properties/x/minimum", RuleInvalid}}},
		{"duplicate keyword", wrap(`{"type":"string","type":"number"}`), []at{{"/properties/x/type", RuleInvalid}}},
		{"duplicate property", `{"type":"object","properties":{"a":{"type":"string"},"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`,
			[]at{{"/properties/a", RuleInvalid}}},

		// several rules at once, in document order
		{"document order", `{"type":"object","properties":{"b":{"type":"strin"},"a":{"type":"object","oneOf":[]}},"required":["b"]}`,
			[]at{
				{"", RuleAdditionalProperties},
				{"/properties/a", RuleRequired},
				{"/properties/b/type", RuleType},
				{"/properties/a", RuleAdditionalProperties},
				{"/properties/a/oneOf", RuleKeyword},
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := check(t, c.schema); !slices.Equal(got, c.want) {
				t.Errorf("got  %v\nwant %v", got, c.want)
			}
		})
	}
}

// TestCheckStrictForbiddenKeywords refuses every keyword outside the list, at the root
// and in a nested schema.
func TestCheckStrictForbiddenKeywords(t *testing.T) {
	forbidden := map[string]string{
		"oneOf": `[{"type":"string"}]`, "allOf": `[{"type":"string"}]`, "not": `{"type":"null"}`,
		"if": `{"type":"string"}`, "then": `{"type":"string"}`, "else": `{"type":"string"}`,
		"patternProperties": `{"^a":{"type":"string"}}`, "unevaluatedProperties": `false`,
		"unevaluatedItems": `false`, "propertyNames": `{"pattern":"^a"}`, "dependentRequired": `{}`,
		"dependentSchemas": `{}`, "dependencies": `{}`, "prefixItems": `[]`, "additionalItems": `false`,
		"contains": `{"type":"string"}`, "minContains": `1`, "maxContains": `1`, "uniqueItems": `true`,
		"minLength": `1`, "maxLength": `1`, "minProperties": `1`, "maxProperties": `1`,
		"title": `"T"`, "default": `null`, "examples": `[]`, "deprecated": `true`, "readOnly": `true`,
		"writeOnly": `true`, "$schema": `"https://json-schema.org/draft/2020-12/schema"`, "$id": `"x"`,
		"$anchor": `"a"`, "$comment": `"c"`, "$dynamicRef": `"#a"`, "$dynamicAnchor": `"a"`,
		"$vocabulary": `{}`, "definitions": `{}`, "contentEncoding": `"base64"`,
		"contentMediaType": `"text/plain"`, "contentSchema": `{}`, "nullable": `true`, "x-custom": `1`,
	}
	for kw, val := range forbidden {
		t.Run(kw, func(t *testing.T) {
			root := `{"type":"object","properties":{},"required":[],"additionalProperties":false,` + fmt.Sprintf("%q", kw) + `:` + val + `}`
			if got, want := check(t, root), []at{{ptr("", kw), RuleKeyword}}; !slices.Equal(got, want) {
				t.Errorf("root: got %v, want %v", got, want)
			}
			nested := wrap(`{"type":"string",` + fmt.Sprintf("%q", kw) + `:` + val + `}`)
			if got, want := check(t, nested), []at{{ptr("/properties/x", kw), RuleKeyword}}; !slices.Equal(got, want) {
				t.Errorf("nested: got %v, want %v", got, want)
			}
		})
	}
}

// TestCheckStrictAllowedKeywords uses each keyword of the list on its own.
func TestCheckStrictAllowedKeywords(t *testing.T) {
	props := map[string]string{
		"type": `{"type":"string"}`, "enum": `{"enum":["a"]}`, "const": `{"const":"a"}`,
		"anyOf": `{"anyOf":[{"type":"string"}]}`, "description": `{"type":"string","description":"d"}`,
		"pattern": `{"type":"string","pattern":"a"}`, "format": `{"type":"string","format":"date"}`,
		"minimum": `{"type":"number","minimum":1}`, "maximum": `{"type":"number","maximum":1}`,
		"exclusiveMinimum": `{"type":"number","exclusiveMinimum":1}`, "exclusiveMaximum": `{"type":"number","exclusiveMaximum":1}`,
		"multipleOf": `{"type":"number","multipleOf":2}`, "minItems": `{"type":"array","items":{"type":"string"},"minItems":1}`,
		"maxItems": `{"type":"array","items":{"type":"string"},"maxItems":1}`, "items": `{"type":"array","items":{"type":"string"}}`,
		"properties/required/additionalProperties": obj("a"),
	}
	for name, p := range props {
		if got := check(t, wrap(p)); len(got) != 0 {
			t.Errorf("%s: %v", name, got)
		}
	}
	withRef := `{"type":"object","properties":{"x":{"$ref":"#/$defs/a"}},"required":["x"],"additionalProperties":false,"$defs":{"a":{"type":"string"}}}`
	if got := check(t, withRef); len(got) != 0 {
		t.Errorf("$defs/$ref: %v", got)
	}
}

// nest builds a schema whose object nesting is levels deep, the root being level 1.
func nest(levels int) string {
	s := obj("leaf")
	for range levels - 1 {
		s = `{"type":"object","properties":{"n":` + s + `},"required":["n"],"additionalProperties":false}`
	}
	return s
}

func TestCheckStrictDepth(t *testing.T) {
	deepest := "" // pointer of the schema at level 11
	for range 10 {
		deepest += "/properties/n"
	}
	cases := []struct {
		name   string
		schema string
		want   []at
	}{
		{"10 levels", nest(10), []at{}},
		{"11 levels", nest(11), []at{{deepest, RuleDepth}}},
		{"12 levels reported once", nest(12), []at{{deepest, RuleDepth}}},
		// 9 objects, then an array (10) of objects (11)
		{"arrays count", func() string {
			s := `{"type":"array","items":` + obj("a") + `}`
			for range 9 {
				s = `{"type":"object","properties":{"n":` + s + `},"required":["n"],"additionalProperties":false}`
			}
			return s
		}(), []at{{strings.Repeat("/properties/n", 9) + "/items", RuleDepth}}},
		// 9 objects, then an array of strings: 10 levels
		{"array of strings at 10", func() string {
			s := `{"type":"array","items":{"type":"string"}}`
			for range 9 {
				s = `{"type":"object","properties":{"n":` + s + `},"required":["n"],"additionalProperties":false}`
			}
			return s
		}(), []at{}},
		{"anyOf adds no level", func() string {
			s := nest(9)
			return `{"type":"object","properties":{"n":{"anyOf":[` + s + `,{"type":"null"}]}},"required":["n"],"additionalProperties":false}`
		}(), []at{}},
		{"through ref", `{"type":"object","properties":{"n":{"type":"object","properties":{"r":{"$ref":"#/$defs/d"}},"required":["r"],"additionalProperties":false}},
			"required":["n"],"additionalProperties":false,"$defs":{"d":` + nest(9) + `}}`,
			[]at{{"/properties/n/properties/r/$ref", RuleDepth}}},
		{"through ref within limit", `{"type":"object","properties":{"r":{"$ref":"#/$defs/d"}},"required":["r"],"additionalProperties":false,"$defs":{"d":` + nest(9) + `}}`,
			[]at{}},
		{"recursion counts once", `{"type":"object","properties":{"root":{"$ref":"#/$defs/node"}},"required":["root"],"additionalProperties":false,
			"$defs":{"node":{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},
			"required":["children"],"additionalProperties":false}}}`, []at{}},
		{"def on its own", `{"type":"object","properties":{},"required":[],"additionalProperties":false,"$defs":{"d":` + nest(11) + `}}`,
			[]at{{"/$defs/d" + deepest, RuleDepth}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := check(t, c.schema); !slices.Equal(got, c.want) {
				t.Errorf("got  %v\nwant %v", got, c.want)
			}
		})
	}
}

func TestCheckStrictPropertiesCount(t *testing.T) {
	names := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("p%d", i)
		}
		return out
	}
	if got := check(t, obj(names(MaxProperties)...)); len(got) != 0 {
		t.Errorf("5000 properties: %v", got)
	}
	got := check(t, obj(names(MaxProperties+1)...))
	if want := []at{{"/properties/p5000", RulePropertiesCount}}; !slices.Equal(got, want) {
		t.Errorf("5001 properties: got %v, want %v", got, want)
	}
	// Nested properties and $defs count too: 4998 + "o" + "o/a" = 5000, then one in $defs.
	s := strings.Replace(obj(append(names(MaxProperties-2), "o")...), `"o":{"type":"string"}`, `"o":`+obj("a"), 1)
	if got := check(t, s); len(got) != 0 {
		t.Fatalf("5000 with nesting: %v", got)
	}
	s = strings.TrimSuffix(s, "}") + `,"$defs":{"d":{"type":"object","properties":{"z":{"type":"string"}},"required":["z"],"additionalProperties":false}}}`
	vs, _ := CheckStrict([]byte(s))
	if len(vs) != 1 || vs[0].Rule != RulePropertiesCount || vs[0].Pointer != "/$defs/d/properties/z" {
		t.Fatalf("5001 with $defs: %v", vs)
	}
	if !strings.Contains(vs[0].Message, "5001") {
		t.Errorf("message %q does not give the total", vs[0].Message)
	}
}

func TestCheckStrictEnumCount(t *testing.T) {
	enum := func(n int) string {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf(`"v%d"`, i)
		}
		return `{"type":"string","enum":[` + strings.Join(vals, ",") + `]}`
	}
	two := func(a, b int) string {
		return `{"type":"object","properties":{"a":` + enum(a) + `,"b":` + enum(b) + `},"required":["a","b"],"additionalProperties":false}`
	}
	if got := check(t, two(600, 400)); len(got) != 0 {
		t.Errorf("1000 values: %v", got)
	}
	vs, _ := CheckStrict([]byte(two(600, 402)))
	if len(vs) != 1 || vs[0].Rule != RuleEnumCount || vs[0].Pointer != "/properties/b/enum/400" {
		t.Fatalf("1002 values: %v", vs)
	}
	if !strings.Contains(vs[0].Message, "1002") {
		t.Errorf("message %q does not give the total", vs[0].Message)
	}
}

func TestCheckStrictNotJSON(t *testing.T) {
	for _, s := range []string{"", " ", "{", `{"type":"object"} {}`, "nope", `{"a":1,}`} {
		_, err := CheckStrict([]byte(s))
		if !errors.Is(err, ErrNotJSON) {
			t.Errorf("%q: err = %v, want ErrNotJSON", s, err)
		}
	}
}

func TestCheckStrictDeterministic(t *testing.T) {
	s := `{"type":"object","properties":{"z":{"type":"object","properties":{"q":{"oneOf":[]}}},"a":{"type":"strng"},
		"m":{"type":"array","items":{"type":"object"}}},"$defs":{"b":{"properties":{"c":{}}},"a":{"title":"t"}}}`
	first, _ := CheckStrict([]byte(s))
	for range 20 {
		again, _ := CheckStrict([]byte(s))
		if !slices.Equal(first, again) {
			t.Fatalf("order changed:\n%v\n%v", first, again)
		}
	}
}

func TestViolationString(t *testing.T) {
	v := Violation{Pointer: "/properties/steps/items", Rule: RuleAdditionalProperties, Message: `objects must set "additionalProperties": false`}
	if got, want := v.String(), `/properties/steps/items: additional_properties: objects must set "additionalProperties": false`; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	root := Violation{Rule: RuleRootNotObject, Message: "m"}
	if got := root.String(); got != "(root): root_not_object: m" {
		t.Errorf("root String() = %q", got)
	}
	b, _ := json.Marshal(v)
	if want := `{"pointer":"/properties/steps/items","rule":"additional_properties","message":"objects must set \"additionalProperties\": false"}`; string(b) != want {
		t.Errorf("JSON = %s", b)
	}
}

// A $ref cycle through no properties or items can never end: the check refuses it, naming
// the loop; recursion through properties or items stays allowed.
func TestCheckStrictRefCycle(t *testing.T) {
	withDefs := func(defs string) string {
		return `{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"required":["a"],"additionalProperties":false,"$defs":{` + defs + `}}`
	}
	refused := []struct {
		name, schema string
		want         Violation
	}{
		{"self", withDefs(`"x":{"$ref":"#/$defs/x"}`), Violation{Pointer: "/$defs/x/$ref", Rule: RuleRefCycle, Message: `the $ref cycle #/$defs/x → #/$defs/x passes through no "properties" or "items": no value can satisfy it`}},
		{"x to y to x", withDefs(`"x":{"$ref":"#/$defs/y"},"y":{"$ref":"#/$defs/x"}`), Violation{Pointer: "/$defs/y/$ref", Rule: RuleRefCycle, Message: `the $ref cycle #/$defs/x → #/$defs/y → #/$defs/x passes through no "properties" or "items": no value can satisfy it`}},
		{"through anyOf", withDefs(`"x":{"anyOf":[{"$ref":"#/$defs/x"},{"type":"null"}]}`), Violation{Pointer: "/$defs/x/anyOf/0/$ref", Rule: RuleRefCycle, Message: `the $ref cycle #/$defs/x → #/$defs/x passes through no "properties" or "items": no value can satisfy it`}},
		{"nested anyOf", withDefs(`"x":{"anyOf":[{"type":"null"},{"anyOf":[{"$ref":"#/$defs/z"}]}]},"z":{"anyOf":[{"$ref":"#/$defs/x"},{"type":"string"}]}`),
			Violation{Pointer: "/$defs/z/anyOf/0/$ref", Rule: RuleRefCycle, Message: `the $ref cycle #/$defs/x → #/$defs/z → #/$defs/x passes through no "properties" or "items": no value can satisfy it`}},
	}
	var long []string
	for i := range 20 {
		long = append(long, fmt.Sprintf(`"x%d":{"$ref":"#/$defs/x%d"}`, i, (i+1)%20))
	}
	refused = append(refused, struct {
		name, schema string
		want         Violation
	}{"a long loop, named by its ends", strings.Replace(withDefs(strings.Join(long, ",")), "#/$defs/x", "#/$defs/x0", 1), Violation{Pointer: "/$defs/x19/$ref", Rule: RuleRefCycle, Message: `the $ref cycle #/$defs/x0 → #/$defs/x1 → #/$defs/x2 → #/$defs/x3 → … → #/$defs/x16 → #/$defs/x17 → #/$defs/x18 → #/$defs/x19 → #/$defs/x0 passes through no "properties" or "items": no value can satisfy it`}})
	for _, c := range refused {
		vs, err := CheckStrict([]byte(c.schema))
		if err != nil || !slices.Contains(vs, c.want) {
			t.Errorf("%s: %v %+v, want %+v", c.name, err, vs, c.want)
		}
		if _, err := Compile([]byte(c.schema)); err == nil {
			t.Errorf("%s: Compile accepted the cycle", c.name)
		}
	}
	allowed := map[string]string{
		"through items":      withDefs(`"x":{"type":["array","null"],"items":{"$ref":"#/$defs/x"}}`),
		"through properties": withDefs(`"x":{"anyOf":[{"type":"object","properties":{"next":{"$ref":"#/$defs/x"}},"required":["next"],"additionalProperties":false},{"type":"null"}]}`),
		"a chain":            withDefs(`"x":{"$ref":"#/$defs/y"},"y":{"anyOf":[{"$ref":"#/$defs/z"},{"type":"null"}]},"z":{"type":"string"}`),
	}
	for name, s := range allowed {
		if got := check(t, s); len(got) > 0 {
			t.Errorf("%s: %v", name, got)
		}
		if _, err := Compile([]byte(s)); err != nil {
			t.Errorf("%s: Compile: %v", name, err)
		}
	}
}
