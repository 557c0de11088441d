package schema

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// wrapV is a strict schema whose one property v has schema sub.
func wrapV(sub string) string {
	return `{"type":"object","properties":{"v":` + sub + `},"required":["v"],"additionalProperties":false}`
}

// validateV validates {"v": data} against wrapV(sub) and returns the problems (nil when
// valid), failing the test on any other error.
func validateV(t *testing.T, sub, data string) []Problem {
	t.Helper()
	v, err := Compile([]byte(wrapV(sub)))
	if err != nil {
		t.Fatalf("Compile(%s): %v", sub, err)
	}
	err = v.Validate([]byte(`{"v":` + data + `}`))
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("%s against %s: %v, want a *ValidationError", data, sub, err)
	}
	// Want is Brief's, which TestBriefSaysWhatAKeywordWants checks.
	for i := range ve.Problems {
		ve.Problems[i].Want = ""
	}
	return ve.Problems
}

// Numbers are decided as written, never through a float64's rounding.
func TestValidateExactNumbers(t *testing.T) {
	cases := []struct {
		schema, data string
		want         []Problem // nil: valid
	}{
		{`{"type":"integer","maximum":12345678901234567890}`, `12345678901234567891`,
			[]Problem{{Path: "/v", Keyword: "maximum", Message: "must be at most 12345678901234567890"}}},
		{`{"type":"integer","maximum":12345678901234567890}`, `12345678901234567890`, nil},
		{`{"type":"integer","minimum":12345678901234567891}`, `12345678901234567890`,
			[]Problem{{Path: "/v", Keyword: "minimum", Message: "must be at least 12345678901234567891"}}},
		{`{"type":"integer","exclusiveMaximum":18446744073709551616}`, `18446744073709551615`, nil},
		{`{"type":"integer","exclusiveMaximum":18446744073709551615}`, `18446744073709551615`,
			[]Problem{{Path: "/v", Keyword: "exclusiveMaximum", Message: "must be less than 18446744073709551615"}}},
		{`{"type":"integer"}`, `1e-400`, []Problem{{Path: "/v", Keyword: "type", Message: "expected integer, got 1e-400"}}},
		{`{"type":"number","exclusiveMinimum":0}`, `1e-400`, nil},
		{`{"type":"number","maximum":0}`, `1e-400`, []Problem{{Path: "/v", Keyword: "maximum", Message: "must be at most 0"}}},
		{`{"type":"integer"}`, `1.0`, nil},
		{`{"type":"integer"}`, `-0.0e5`, nil},
		{`{"type":"integer"}`, `1.5e1`, nil},
		{`{"type":"integer"}`, `1.55e1`, []Problem{{Path: "/v", Keyword: "type", Message: "expected integer, got 1.55e1"}}},
		{`{"type":"integer","multipleOf":0.5}`, `1e308`, nil},
		{`{"type":"integer","multipleOf":0.5}`, `2e309`, nil},
		{`{"type":"number","maximum":1e308}`, `2e309`, []Problem{{Path: "/v", Keyword: "maximum", Message: "must be at most 1e308"}}},
		{`{"type":"number","multipleOf":0.1}`, `0.3`, nil},
		{`{"type":"number","multipleOf":0.1}`, `0.35`, []Problem{{Path: "/v", Keyword: "multipleOf", Message: "must be a multiple of 0.1"}}},
		{`{"type":"integer","multipleOf":3}`, `12345678901234567890`, nil},
		{`{"type":"integer","multipleOf":3}`, `12345678901234567891`, []Problem{{Path: "/v", Keyword: "multipleOf", Message: "must be a multiple of 3"}}},
		{`{"type":"number","multipleOf":0.0001}`, `0.0075`, nil},
		{`{"type":"number","multipleOf":0.0001}`, `0.00751`, []Problem{{Path: "/v", Keyword: "multipleOf", Message: "must be a multiple of 0.0001"}}},
		{`{"type":"integer","multipleOf":7}`, `7e1000000`, nil},
		{`{"type":"integer","multipleOf":7}`, `1e1000000`, []Problem{{Path: "/v", Keyword: "multipleOf", Message: "must be a multiple of 7"}}},
		{`{"type":"number","multipleOf":7}`, `1e-1000000`, []Problem{{Path: "/v", Keyword: "multipleOf", Message: "must be a multiple of 7"}}},
		{`{"type":"integer","multipleOf":1.5}`, `0`, nil},
		{`{"type":"number","multipleOf":0.04}`, `1`, nil},
		{`{"type":"number","multipleOf":0.0016}`, `1e1000000`, nil},
		{`{"type":"number","multipleOf":0.0016}`, `3e1000000`, nil},
		{`{"type":"number","multipleOf":0.0017}`, `1e1000000`, []Problem{{Path: "/v", Keyword: "multipleOf", Message: "must be a multiple of 0.0017"}}},
		{`{"enum":[1,"a"]}`, `1.0`, nil},
		{`{"const":100}`, `1e2`, nil},
		{`{"const":{"a":[1,2]}}`, `{"a":[1.0,2e0]}`, nil},
		{`{"const":12345678901234567890}`, `12345678901234567891`, []Problem{{Path: "/v", Keyword: "const", Message: "must be 12345678901234567890"}}},
		{`{"type":"array","maxItems":1e1}`, `[1,2,3,4,5,6,7,8,9,10,11]`, []Problem{{Path: "/v", Keyword: "maxItems", Message: "must have at most 10 items, has 11"}}},
		{`{"type":"number"}`, `1e9999999999999999`, []Problem{{Path: "/v", Keyword: "range", Message: "a number whose exponent is beyond ±1000000000000000 is out of range"}}},
	}
	for _, c := range cases {
		if got := validateV(t, c.schema, c.data); !slices.Equal(got, c.want) {
			t.Errorf("%s against %s:\n got  %+v\n want %+v", c.data, c.schema, got, c.want)
		}
	}
}

// Data nested deeper than MaxDataDepth is invalid, whatever the schema, and never takes the
// stack down; data within it validates.
func TestValidateDataDepth(t *testing.T) {
	v, err := Compile([]byte(`{"type":"object","properties":{"v":{"$ref":"#/$defs/n"}},"required":["v"],"additionalProperties":false,
		"$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	nested := func(n int) string { return `{"v":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}` }
	// The object is level 1: 255 arrays inside it make 256 levels.
	if err := v.Validate([]byte(nested(255))); err != nil {
		t.Errorf("256 levels: %v", err)
	}
	// Deeper data is invalid JSON, to the validator as to ParseAnswer: one rule for both.
	want := "invalid JSON: nested deeper than 256 levels (line 1, column 261)"
	for _, n := range []int{256, 5_000_000} {
		if err := v.Validate([]byte(nested(n))); !errors.Is(err, ErrInvalidJSON) || err.Error() != want {
			t.Errorf("%d arrays: %v, want %s", n, err, want)
		}
	}
}

// $ref and anyOf that a document meets by many paths are decided once for each value:
// 40 levels of two branches each would be 2^40 walks.
func TestValidateSharedBranchesOnce(t *testing.T) {
	var defs []string
	for i := range 40 {
		defs = append(defs, `"d`+strconv.Itoa(i)+`":{"anyOf":[{"$ref":"#/$defs/d`+strconv.Itoa(i+1)+`"},{"$ref":"#/$defs/d`+strconv.Itoa(i+1)+`"}]}`)
	}
	defs = append(defs, `"d40":{"type":"string"}`)
	s := `{"type":"object","properties":{"v":{"$ref":"#/$defs/d0"}},"required":["v"],"additionalProperties":false,"$defs":{` + strings.Join(defs, ",") + `}}`
	if vs, err := CheckStrict([]byte(s)); err != nil || len(vs) > 0 {
		t.Fatalf("strict: %v %v", err, vs)
	}
	v, err := Compile([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	err = v.Validate([]byte(`{"v":1}`))
	if err == nil || err.Error() != "/v: matches none of the 2 alternatives (anyOf)" {
		t.Errorf("Validate = %v", err)
	}
	if err := v.Validate([]byte(`{"v":"s"}`)); err != nil {
		t.Errorf("Validate = %v", err)
	}
}

// A chain of references longer than the walk may go fails the value, not the stack.
func TestValidateLongReferenceChain(t *testing.T) {
	const n = 5000
	var defs []string
	for i := range n {
		defs = append(defs, `"d`+strconv.Itoa(i)+`":{"anyOf":[{"$ref":"#/$defs/d`+strconv.Itoa(i+1)+`"},{"type":"null"}]}`)
	}
	defs = append(defs, `"d`+strconv.Itoa(n)+`":{"type":"string"}`)
	s := `{"type":"object","properties":{"v":{"$ref":"#/$defs/d0"}},"required":["v"],"additionalProperties":false,"$defs":{` + strings.Join(defs, ",") + `}}`
	v, err := Compile([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate([]byte(`{"v":null}`)); err != nil {
		t.Errorf("null: %v", err)
	}
	var ve *ValidationError
	if err := v.Validate([]byte(`{"v":"s"}`)); !errors.As(err, &ve) || !slices.ContainsFunc(ve.Problems, func(p Problem) bool { return p.Keyword == "$ref" }) {
		t.Errorf("a string past the chain's reach: %v", err)
	}
}

// BenchmarkMultipleOfHugeExponent: a multipleOf on a number with a huge exponent costs what
// a small one does.
func BenchmarkMultipleOfHugeExponent(b *testing.B) {
	v, err := Compile([]byte(wrapV(`{"type":"number","multipleOf":0.7}`)))
	if err != nil {
		b.Fatal(err)
	}
	for _, doc := range []string{`{"v":7e1000000}`, `{"v":1e-1000000}`, `{"v":123456789012345678901234567890e999999}`} {
		b.Run(doc[5:12], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = v.Validate([]byte(doc))
			}
		})
	}
}
