package answer

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/crw-dev/crw/engine/schema/internal/jsontree"
)

// The cases of issue 8: prose and then a deep object that never closes took 1.5 s at
// 205 KB and 13.8 s at 615 KB. The scanners examine each byte a few times at most.
func TestParseAnswerLinear(t *testing.T) {
	inputs := map[string]func(n int) string{
		"deep unterminated": func(n int) string { return "Here is my answer: " + strings.Repeat(`{"a":`, n/5) },
		"deep closed":       func(n int) string { return "Here: " + strings.Repeat(`{"a":`, n/10) + "1" + strings.Repeat("}", n/10) },
		"deep arrays in an object": func(n int) string {
			return "So: {\"a\":" + strings.Repeat("[", n/2)
		},
		"objects in strings":   func(n int) string { return "x " + strings.Repeat(`{"{":`, n/5) },
		"quotes and braces":    func(n int) string { return "x " + strings.Repeat(`{"a":"{\"`, n/9) },
		"closed objects":       func(n int) string { return "x " + strings.Repeat(`{"a":{}} `, n/9) + "y" },
		"objects then spaces":  func(n int) string { return "x " + strings.Repeat(`{} `, n/6) + strings.Repeat(" ", n/2) + "y" },
		"long strings":         func(n int) string { return "x " + strings.Repeat(`{"`+strings.Repeat("a{", 50)+`":`, n/105) },
		"many open, one close": func(n int) string { return "x " + strings.Repeat(`{"a":[`, n/6) + "]}" },
		"fenced":               func(n int) string { return "x " + strings.Repeat(`{"a":`, n/5) + "\n```" },
	}
	for name, gen := range inputs {
		t.Run(name, func(t *testing.T) {
			for _, n := range []int{20_000, 200_000, 600_000} {
				text := gen(n)
				_, _, steps, _ := Find(text, Reading{})
				if steps > 4*len(text)+100 {
					t.Fatalf("%d bytes: %d steps, more than 4 a byte", len(text), steps)
				}
			}
		})
	}
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
		doc, extracted, steps, err := Find(text, Reading{})
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
		if err := checkAccepted([]byte(doc)); err != nil {
			t.Fatalf("%q: accepted %q: %v", text, doc, err)
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
		v, _, err := jsontree.Parse(string(data))
		switch {
		case err == nil && !valid:
			t.Fatalf("%q: the tree parser accepts what encoding/json refuses", data)
		case err != nil && valid && !errors.Is(err, jsontree.ErrTooLarge):
			t.Fatalf("%q: the tree parser refuses valid JSON: %v", data, err)
		case err == nil:
			var want, got any
			if err := decodeNumbers(data, &want); err != nil {
				t.Fatal(err)
			}
			if err := decodeNumbers(jsontree.AppendJSON(nil, v), &got); err != nil {
				t.Fatalf("%q: the tree writes %q: %v", data, jsontree.AppendJSON(nil, v), err)
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("%q: the tree reads %#v, encoding/json %#v", data, got, want)
			}
		}

		t2 := strings.TrimLeft(string(data), " \t\r\n")
		if t2 == "" {
			return
		}
		sc := scanner(t2, Reading{})
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
