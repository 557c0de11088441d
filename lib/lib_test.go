package lib_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/lib"
	"github.com/crw-dev/crw/runtime/vm"
)

// exports are the non-function exports of an embedded module, as a workflow's import hands
// them to the strict check.
func exports(t *testing.T, name string) map[string]json.RawMessage {
	t.Helper()
	m, err := vm.Exports(lib.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSchemasExports(t *testing.T) {
	names := slices.Sorted(maps.Keys(exports(t, "schemas.js")))
	want := []string{"buildReport", "decision", "findingTriage", "plan", "reviewVerdict"}
	if !slices.Equal(names, want) {
		t.Fatalf("exports = %v, want %v", names, want)
	}
}

func TestSchemasAreStrict(t *testing.T) {
	all := exports(t, "schemas.js")
	for _, name := range slices.Sorted(maps.Keys(all)) {
		raw := all[name]
		t.Run(name, func(t *testing.T) {
			vs, err := schema.CheckStrict(raw)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vs {
				t.Errorf("%s", v)
			}
			v, err := schema.Compile(raw)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := schema.Synthesize(raw)
			if err != nil {
				t.Fatal(err)
			}
			if err := v.Validate(doc); err != nil {
				t.Errorf("synthesized %s: %v", doc, err)
			}
		})
	}
}

// Descriptions are what the model reads about each field: every property has one.
func TestSchemasDescribeEveryProperty(t *testing.T) {
	for name, raw := range exports(t, "schemas.js") {
		var root any
		if err := json.Unmarshal(raw, &root); err != nil {
			t.Fatal(err)
		}
		var walk func(s any, at string)
		walk = func(s any, at string) {
			m, ok := s.(map[string]any)
			if !ok {
				return
			}
			if d, _ := m["description"].(string); d == "" {
				t.Errorf("%s%s: no description", name, at)
			}
			if props, ok := m["properties"].(map[string]any); ok {
				for k, p := range props {
					walk(p, at+"/properties/"+k)
				}
			}
			walk(m["items"], at+"/items")
		}
		walk(root, "")
	}
}

func TestSchemasAcceptRealisticAnswers(t *testing.T) {
	all := exports(t, "schemas.js")
	cases := []struct {
		schema string
		doc    string
		ok     bool
	}{
		{"plan", `{"summary":"Add a flag.","steps":[{"id":"s1","title":"Add the flag","description":"Parse --dry-run.","files":["cmd/crw/main.go"]}],"risks":[]}`, true},
		{"plan", `{"summary":"Nothing.","steps":[],"risks":[]}`, false},
		{"buildReport", `{"status":"partial","summary":"Half done.","filesChanged":["a.go"],"testsRun":[{"command":"go test ./...","passed":false}],"notes":null}`, true},
		{"buildReport", `{"status":"finished","summary":"","filesChanged":[],"testsRun":[],"notes":null}`, false},
		{"reviewVerdict", `{"verdict":"request_changes","summary":"One bug.","findings":[{"id":"f1","severity":"major","file":"a.go","line":12,"title":"Off by one","detail":"The loop skips the last item.","suggestion":null},{"id":"f2","severity":"nit","file":null,"line":null,"title":"Naming","detail":"Names are long.","suggestion":"Shorten them."}]}`, true},
		{"reviewVerdict", `{"verdict":"approve","summary":"","findings":[{"id":"f1","severity":"blocker","file":null,"line":null,"title":"","detail":"","suggestion":null}]}`, false},
		{"reviewVerdict", `{"verdict":"approve","summary":"","findings":[{"id":"f1","severity":"minor","file":null,"line":0,"title":"","detail":"","suggestion":null}]}`, false},
		{"decision", `{"decision":true,"reasons":["Tests pass."],"confidence":"high"}`, true},
		{"decision", `{"decision":"yes","reasons":[],"confidence":"high"}`, false},
		{"findingTriage", `{"summary":"Keep one.","findings":[{"id":"f1","action":"keep","reason":"Real bug."},{"id":"f2","action":"drop","reason":"Style only."}]}`, true},
		{"findingTriage", `{"summary":"","findings":[{"id":"f1","action":"keep"}]}`, false},
	}
	for _, c := range cases {
		v, err := schema.Compile(all[c.schema])
		if err != nil {
			t.Fatal(err)
		}
		err = v.Validate([]byte(c.doc))
		if (err == nil) != c.ok {
			t.Errorf("%s: Validate(%s) = %v, want ok=%v", c.schema, c.doc, err, c.ok)
		}
	}
}
