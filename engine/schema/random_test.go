package schema

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// schemaGen builds random strict schemas from the allowed keywords.
type schemaGen struct {
	r    *rand.Rand
	defs []string
}

func (g *schemaGen) pick(options ...string) string { return options[g.r.IntN(len(options))] }

func (g *schemaGen) leaf() string {
	switch g.r.IntN(9) {
	case 0:
		return `{"type":"string"}`
	case 1:
		return `{"type":` + g.pick(`"string"`, `["string","null"]`) + `,"pattern":` +
			g.pick(`"^[a-z]{2,5}$"`, `"^\\d+(\\.\\d+)?$"`, `"x"`, `"^(ab|cd)*e$"`, `"^[^\\s]+@[a-z]+\\.com$"`) + `}`
	case 2:
		return `{"type":"string","format":` + g.pick(`"date-time"`, `"date"`, `"email"`, `"uri"`, `"uuid"`, `"hostname"`) + `}`
	case 3:
		return `{"type":"string","enum":["a","b",` + g.pick(`"c"`, `"d e"`) + `]}`
	case 4:
		lo := g.r.IntN(20) - 10
		return fmt.Sprintf(`{"type":%s,"minimum":%d,"maximum":%d}`, g.pick(`"integer"`, `"number"`, `["integer","null"]`), lo, lo+g.r.IntN(5))
	case 5:
		return fmt.Sprintf(`{"type":"number","exclusiveMinimum":%g,"multipleOf":%s}`, float64(g.r.IntN(100))/10, g.pick("0.5", "0.1", "3", "0.25"))
	case 6:
		return `{"type":` + g.pick(`"boolean"`, `"null"`, `["boolean","null"]`) + `}`
	case 7:
		return `{"const":` + g.pick(`1`, `"k"`, `null`, `{"a":[true]}`) + `}`
	default:
		return `{"enum":[` + g.pick(`1,2`, `"x",null`, `[1],{"a":1}`) + `]}`
	}
}

func (g *schemaGen) schema(depth int) string {
	if depth <= 0 {
		return g.leaf()
	}
	switch g.r.IntN(6) {
	case 0, 1:
		return g.object(depth - 1)
	case 2:
		bounds := g.pick(``, `,"minItems":2`, `,"maxItems":1`, `,"minItems":1,"maxItems":3`, `,"maxItems":0`)
		return `{"type":` + g.pick(`"array"`, `["array","null"]`) + `,"items":` + g.schema(depth-1) + bounds + `}`
	case 3:
		return `{"anyOf":[` + g.schema(depth-1) + `,` + g.schema(depth-1) + `]}`
	case 4:
		if len(g.defs) > 0 {
			return `{"$ref":"#/$defs/` + g.defs[g.r.IntN(len(g.defs))] + `"}`
		}
		return g.leaf()
	default:
		return g.leaf()
	}
}

func (g *schemaGen) object(depth int) string {
	n := g.r.IntN(4)
	var props, req []string
	for i := range n {
		props = append(props, fmt.Sprintf(`"%s":%s`, g.pick("type", "p", "items", "q", "enum")+fmt.Sprint(i), g.schema(depth)))
		req = append(req, fmt.Sprintf(`"%s"`, strings.SplitN(props[i], `"`, 3)[1]))
	}
	typ := g.pick(`"object"`, `"object"`, `["object","null"]`)
	return `{"type":` + typ + `,"properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(req, ",") + `],"additionalProperties":false}`
}

func (g *schemaGen) root() string {
	g.defs = nil
	var defs []string
	for i := range g.r.IntN(3) {
		name := fmt.Sprintf("d%d", i)
		defs = append(defs, fmt.Sprintf(`"%s":%s`, name, g.schema(2)))
		g.defs = append(g.defs, name)
	}
	s := g.object(3)
	s = strings.Replace(s, `["object","null"]`, `"object"`, 1)
	if len(defs) > 0 {
		s = strings.TrimSuffix(s, "}") + `,"$defs":{` + strings.Join(defs, ",") + `}}`
	}
	return s
}

// mutate changes one value somewhere in a document.
func mutate(r *rand.Rand, v any) any {
	replacements := []any{"zz", 1.5, -7.0, nil, true, []any{}, map[string]any{}, map[string]any{"extra": 1.0}}
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 || r.IntN(4) == 0 {
			x["unexpected"] = 1.0
			return x
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		k := keys[r.IntN(len(keys))]
		if r.IntN(5) == 0 {
			delete(x, k)
		} else {
			x[k] = mutate(r, x[k])
		}
		return x
	case []any:
		if len(x) == 0 || r.IntN(3) == 0 {
			return append(x, replacements[r.IntN(len(replacements))])
		}
		i := r.IntN(len(x))
		x[i] = mutate(r, x[i])
		return x
	}
	return replacements[r.IntN(len(replacements))]
}

// TestRandomSchemas: random strict schemas pass the check and compile; what Synthesize
// builds validates; and for damaged documents the explanation finds the problem itself
// rather than falling back to the library's message.
func TestRandomSchemas(t *testing.T) {
	g := &schemaGen{r: rand.New(rand.NewPCG(1, 2))}
	built, damaged := 0, 0
	for range 400 {
		s := g.root()
		if vs, err := CheckStrict([]byte(s)); err != nil || len(vs) > 0 {
			t.Fatalf("generated schema refused: %v %v\n%s", err, vs, s)
		}
		v, err := Compile([]byte(s))
		if err != nil {
			t.Fatalf("Compile: %v\n%s", err, s)
		}
		doc, err := Synthesize([]byte(s))
		if err != nil {
			t.Fatalf("Synthesize: %v\n%s", err, s)
		}
		built++
		if err := v.Validate(doc); err != nil {
			t.Fatalf("synthesized %s: %v\nschema %s", doc, err, s)
		}
		for range 5 {
			var inst any
			_ = json.Unmarshal(doc, &inst)
			bad, _ := json.Marshal(mutate(g.r, inst))
			err := v.Validate(bad)
			if err == nil {
				continue
			}
			damaged++
			ve, ok := err.(*ValidationError)
			if !ok || len(ve.Problems) == 0 {
				t.Fatalf("Validate(%s) = %v\nschema %s", bad, err, s)
			}
			// The report walk finds a reason wherever the verdict walk failed.
			if ve.Problems[0].Keyword == "schema" {
				t.Errorf("no explanation for %s: %v\nschema %s", bad, err, s)
			}
		}
	}
	t.Logf("%d schemas, %d damaged documents", built, damaged)
}
