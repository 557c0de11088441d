package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// The seeds name github.com/google/jsonschema-go as the validator of answers; crw validates
// its strict subset itself. These tests hold the two to the same verdict on strict schemas
// and the documents crw's reader accepts, except where they differ on purpose, each
// difference named here and in docs/workflows.md ("How answers are validated"):
//
//   - exact_numbers: crw compares and divides numbers exactly as written; jsonschema-go reads
//     them into float64. A disagreement is this one when a number of the schema or of the
//     document is not exactly a float64 (or is outside its range), or a multipleOf quotient
//     of a number of the document is not exactly a float64.
//
// That is the only one: strict schemas have no "$schema", patterns are RE2 in both (Go's
// regexp), and format is an annotation in both.
// Documents crw's reader refuses (two members of one name, a lone surrogate, invalid UTF-8,
// deeper than MaxDataDepth) are not compared: they never reach validation.

// verdicts is what the two validators said of one document.
type verdicts struct {
	crw, other error
	excuse     string // the documented difference that explains a disagreement, or ""
}

func (v verdicts) agree() bool { return (v.crw == nil) == (v.other == nil) }

// errNotCompared: the schema or the document is outside what the test compares.
var errNotCompared = errors.New("not compared")

// bothVerdicts validates doc against a strict schema with both validators.
func bothVerdicts(schema, doc []byte) (verdicts, error) {
	if vs, err := CheckStrict(schema); err != nil || len(vs) > 0 {
		return verdicts{}, errNotCompared
	}
	if !json.Valid(doc) || !utf8Clean(doc) { // what crw reads as invalid JSON is left out below
		return verdicts{}, errNotCompared
	}
	v, err := Compile(schema)
	if err != nil {
		return verdicts{}, fmt.Errorf("a strict schema does not compile: %w", err)
	}
	out := verdicts{crw: v.Validate(doc)}
	if out.crw != nil {
		var ve *ValidationError
		if !errors.As(out.crw, &ve) {
			return verdicts{}, errNotCompared // the reader's refusal, not a verdict
		}
	}
	out.other = otherVerdict(schema, doc)
	if !out.agree() {
		out.excuse = excuse(schema, doc)
	}
	return out, nil
}

// otherVerdict is jsonschema-go's verdict; a schema it cannot read or resolve counts as a
// refusal of the document.
func otherVerdict(schema, doc []byte) error {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Errorf("jsonschema-go reads the schema: %w", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return fmt.Errorf("jsonschema-go resolves the schema: %w", err)
	}
	var inst any
	if err := json.Unmarshal(doc, &inst); err != nil {
		return fmt.Errorf("jsonschema-go reads the document: %w", err)
	}
	return rs.Validate(inst)
}

// excuse names the documented difference that explains a disagreement, or "".
func excuse(schema, doc []byte) string {
	schemaNums, multiples := numbersOf(schema)
	docNums, _ := numbersOf(doc)
	for _, n := range append(schemaNums, docNums...) {
		if !exactFloat(n) {
			return "exact_numbers"
		}
	}
	for _, m := range multiples {
		for _, n := range docNums {
			if !exactQuotient(n, m) {
				return "exact_numbers"
			}
		}
	}
	return ""
}

// numbersOf lists the number literals of a document, and those that are a multipleOf's value.
func numbersOf(data []byte) (all, multiples []json.Number) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var key string
	var inObject []bool
	expectKey := false
	for {
		tok, err := dec.Token()
		if err == io.EOF || err != nil {
			return all, multiples
		}
		isKey := len(inObject) > 0 && inObject[len(inObject)-1] && expectKey
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				inObject = append(inObject, t == '{')
				expectKey = t == '{'
				continue
			default:
				inObject = inObject[:len(inObject)-1]
			}
		case string:
			if isKey {
				key = t
				expectKey = false
				continue
			}
		case json.Number:
			all = append(all, t)
			if key == "multipleOf" && len(inObject) > 0 && inObject[len(inObject)-1] {
				multiples = append(multiples, t)
			}
		}
		if len(inObject) > 0 && inObject[len(inObject)-1] {
			expectKey = true
			key = ""
		}
	}
}

// exactFloat: the literal is a float64 exactly.
func exactFloat(n json.Number) bool {
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return false
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) {
		return false
	}
	return r.Cmp(new(big.Rat).SetFloat64(f)) == 0
}

// exactQuotient: n / m in float64 is the exact quotient.
func exactQuotient(n, m json.Number) bool {
	nf, err1 := n.Float64()
	mf, err2 := m.Float64()
	if err1 != nil || err2 != nil || mf == 0 {
		return false
	}
	q := nf / mf
	if math.IsInf(q, 0) || math.IsNaN(q) {
		return false
	}
	nr, _ := new(big.Rat).SetString(string(n))
	mr, _ := new(big.Rat).SetString(string(m))
	return new(big.Rat).Quo(nr, mr).Cmp(new(big.Rat).SetFloat64(q)) == 0
}

func utf8Clean(doc []byte) bool { return strings.ToValidUTF8(string(doc), "\uFFFD") == string(doc) }

// TestAgreesWithJSONSchemaGo: on random strict schemas, the documents Synthesize builds for
// them and those documents damaged, crw's verdict is jsonschema-go's but for the documented
// differences.
func TestAgreesWithJSONSchemaGo(t *testing.T) {
	g := &schemaGen{r: rand.New(rand.NewPCG(7, 11))}
	compared, invalid := 0, 0
	excused := map[string]int{}
	for range 600 {
		s := []byte(g.root())
		doc, err := Synthesize(s)
		if err != nil {
			t.Fatalf("Synthesize: %v\n%s", err, s)
		}
		docs := [][]byte{doc}
		for range 5 {
			var inst any
			if err := json.Unmarshal(doc, &inst); err != nil {
				t.Fatal(err)
			}
			bad, err := json.Marshal(mutate(g.r, inst))
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, bad)
		}
		for _, d := range docs {
			v, err := bothVerdicts(s, d)
			if errors.Is(err, errNotCompared) {
				continue
			}
			if err != nil {
				t.Fatalf("%v\nschema %s", err, s)
			}
			compared++
			if v.crw != nil {
				invalid++
			}
			switch {
			case v.agree():
			case v.excuse != "":
				excused[v.excuse]++
			default:
				t.Fatalf("crw says %v, jsonschema-go %v\nschema %s\ndocument %s", v.crw, v.other, s, d)
			}
		}
	}
	if compared < 3000 || invalid < 1000 {
		t.Fatalf("compared %d documents, %d invalid: too few to hold the two to each other", compared, invalid)
	}
	t.Logf("%d documents compared, %d invalid; excused: %v", compared, invalid, excused)
}

// TestTheDocumentedDifferences: each documented difference is one, and is named.
func TestTheDocumentedDifferences(t *testing.T) {
	for _, tt := range []struct {
		name, schema, doc, excuse string
		crwValid                  bool
	}{
		{"a multiple of a decimal", wrapV(`{"type":"number","multipleOf":0.1}`), `{"v":0.3}`, "exact_numbers", true},
		{"a multiple past float64's integers", wrapV(`{"type":"integer","multipleOf":3}`), `{"v":1180591620717411303424}`, "exact_numbers", false},
		{"a bound past float64's precision", wrapV(`{"type":"integer","exclusiveMaximum":9007199254740993}`), `{"v":9007199254740992}`, "exact_numbers", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, err := bothVerdicts([]byte(tt.schema), []byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if (v.crw == nil) != tt.crwValid {
				t.Fatalf("crw: %v", v.crw)
			}
			if v.agree() || v.excuse != tt.excuse {
				t.Fatalf("crw %v, jsonschema-go %v, excuse %q; want a disagreement excused as %q", v.crw, v.other, v.excuse, tt.excuse)
			}
		})
	}
}

// FuzzAgreesWithJSONSchemaGo: for any strict schema and any document crw's reader accepts,
// the two validators agree but for the documented differences.
func FuzzAgreesWithJSONSchemaGo(f *testing.F) {
	g := &schemaGen{r: rand.New(rand.NewPCG(3, 5))}
	for range 12 {
		s := []byte(g.root())
		doc, err := Synthesize(s)
		if err != nil {
			f.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, s); err != nil {
			f.Fatal(err)
		}
		f.Add(compact.Bytes(), []byte(doc))
	}
	f.Add([]byte(wrapV(`{"type":"number","multipleOf":0.5}`)), []byte(`{"v":1.5}`))
	f.Add([]byte(wrapV(`{"anyOf":[{"type":"string","pattern":"^a+$"},{"type":"null"}]}`)), []byte(`{"v":"aab"}`))
	f.Fuzz(func(t *testing.T, schema, doc []byte) {
		v, err := bothVerdicts(schema, doc)
		if errors.Is(err, errNotCompared) {
			return
		}
		if err != nil {
			t.Fatalf("%v\nschema %s", err, schema)
		}
		if !v.agree() && v.excuse == "" {
			t.Fatalf("crw says %v, jsonschema-go %v\nschema %s\ndocument %s", v.crw, v.other, schema, doc)
		}
	})
}
