package schema_test

import (
	"errors"
	"testing"

	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/engine/schema/jsts"
)

// TestJSONSchemaTestSuite holds the validator to the official JSON-Schema-Test-Suite (draft
// 2020-12, upstream 44401e0): every group whose wrapped schema passes the strict rules, every
// case of it, with the verdict the suite gives, except jsts.Differences, where crw's verdict is
// the other one for the reason given there.
func TestJSONSchemaTestSuite(t *testing.T) {
	groups, err := jsts.Load("testdata/jsts")
	if err != nil {
		t.Fatal(err)
	}
	kept, cases, differing := 0, 0, 0
	seen := map[string]bool{}
	for _, g := range groups {
		vs, err := schema.CheckStrict(g.Schema)
		if err != nil {
			t.Fatalf("%s: %s: %v", g.File, g.Description, err)
		}
		if len(vs) > 0 {
			continue
		}
		kept++
		v, err := schema.Compile(g.Schema)
		if err != nil {
			t.Errorf("%s: %s: a strict schema does not compile: %v", g.File, g.Description, err)
			continue
		}
		for _, c := range g.Cases {
			cases++
			key := jsts.Key(g, c)
			want := c.Valid
			if _, differs := jsts.Differences[key]; differs {
				want, seen[key] = !want, true
				differing++
			}
			err := v.Validate([]byte(c.Answer()))
			var ve *schema.ValidationError
			if err != nil && !errors.As(err, &ve) {
				t.Errorf("%s: %v, want a verdict", key, err)
				continue
			}
			if got := err == nil; got != want {
				t.Errorf("%s: valid = %v, want %v (%v)\n  schema %s\n  data %s", key, got, want, err, g.Schema, c.Data)
			}
		}
	}
	for key := range jsts.Differences {
		if !seen[key] {
			t.Errorf("difference %q: no such case in a kept group", key)
		}
	}
	t.Logf("%d of %d groups kept, %d cases, %d of them documented differences", kept, len(groups), cases, differing)
}
