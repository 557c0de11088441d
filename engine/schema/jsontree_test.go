package schema

import (
	"errors"
	"strings"
	"testing"
)

// A schema document nested absurdly deep or too large is refused early, before any tree
// is built, by every reader of schemas; one within the limits is read.
func TestSchemaDocumentLimits(t *testing.T) {
	nested := func(n int) string {
		return strings.Repeat(`{"type":"object","properties":{"a":`, n) + `{"type":"string"}` + strings.Repeat(`}}`, n)
	}
	cases := []struct{ name, doc, want string }{
		{"5M brackets", strings.Repeat("[", 5_000_000) + strings.Repeat("]", 5_000_000),
			"too large: 10000000 bytes; the limit is 1048576"},
		{"500k brackets", strings.Repeat("[", 500_000) + strings.Repeat("]", 500_000),
			"too large: nested deeper than 128 levels (line 1, column 129)"},
		{"schema nested 100k deep", nested(100_000), "too large: 3700017 bytes; the limit is 1048576"},
		{"schema nested 20k deep", nested(20_000),
			"too large: nested deeper than 128 levels (line 1, column 2241)"},
		{"deep on line 3", "{\n\"const\":\n" + strings.Repeat("[", 200),
			"too large: nested deeper than 128 levels (line 3, column 128)"},
		{"over 1 MiB", `{"description":"` + strings.Repeat("x", MaxSchemaSize) + `"}`,
			"too large: 1048594 bytes; the limit is 1048576"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for name, read := range map[string]func([]byte) error{
				"CheckStrict": func(b []byte) error { _, err := CheckStrict(b); return err },
				"Compile":     func(b []byte) error { _, err := Compile(b); return err },
				"Synthesize":  func(b []byte) error { _, err := Synthesize(b); return err },
			} {
				err := read([]byte(c.doc))
				if !errors.Is(err, ErrTooLarge) || !strings.HasSuffix(err.Error(), ": "+c.want) {
					t.Errorf("%s: %v, want %q", name, err, c.want)
				}
			}
		})
	}
	// Exactly MaxSchemaDepth levels are read.
	doc := `{"type":"object","properties":{"c":{"const":` + strings.Repeat("[", MaxSchemaDepth-4) + strings.Repeat("]", MaxSchemaDepth-4) +
		`}},"required":["c"],"additionalProperties":false}`
	if vs, err := CheckStrict([]byte(doc)); err != nil || len(vs) != 0 {
		t.Fatalf("%d levels: %v %v", MaxSchemaDepth, vs, err)
	}
}

// BenchmarkCheckStrictLargest: the largest schema documents the limits let through, a
// MaxSchemaSize document of one flat array and one of 20,000 nested levels (refused at
// level 129), read and checked with the cache left out; B/op is the memory a hostile
// schema can cost.
func BenchmarkCheckStrictLargest(b *testing.B) {
	flat := `{"type":"object","properties":{"c":{"const":[` + strings.Repeat("0,", (MaxSchemaSize-100)/2) + `0]}},"required":["c"],"additionalProperties":false}`
	nested := strings.Repeat(`{"type":"object","properties":{"a":`, 20_000)
	for name, doc := range map[string]string{"flat": flat, "nested": nested} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = parse([]byte(doc)).CheckStrict()
			}
		})
	}
}
