package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/crw-dev/crw/engine/schema/internal/jsonscan"
)

// datum is one value of a document being validated; numbers keep their written form.
type datum struct {
	kind kind
	b    bool
	num  decimal
	text string // a string's value, a number as written
	arr  []*datum
	obj  []field // in document order, names unique
}

type field struct {
	name string
	val  *datum
}

// readDocument decodes exactly one JSON document for validation. A document that is not
// one JSON value, or whose object repeats a member name (RFC 8259 leaves its meaning open;
// crw reads it as invalid JSON and asks for a repair), gets the errors of ParseAnswer. A
// document that nests deeper than MaxDataDepth, or holds a number beyond maxExponent, is
// JSON but not acceptable data: it comes back as a problem, and only the first one (a
// document refused for its depth is read no further).
func readDocument(doc []byte) (*datum, *Problem, error) {
	s := string(doc)
	t := strings.TrimSpace(s)
	if t == "" {
		return nil, nil, ErrNoJSON
	}
	lead := len(s) - len(strings.TrimLeftFunc(s, unicode.IsSpace))
	// The rules of ParseAnswer first, by the same scanner, so that a document reads the same
	// to both: duplicate names, lone surrogates, invalid UTF-8 and data nested deeper than
	// MaxDataDepth are invalid JSON.
	sc := answerScanner(t)
	end, serr := sc.Value(0)
	if serr != nil {
		return nil, nil, invalidJSON(s, lead, serr)
	}
	if end < len(t) {
		return nil, nil, trailingError(strings.TrimSpace(t[end:]))
	}
	r := &reader{dec: json.NewDecoder(strings.NewReader(t))}
	r.dec.UseNumber()
	d, err := r.value("", 1)
	if errors.Is(err, errTooDeep) {
		return nil, r.problem, nil
	}
	if err != nil {
		if errors.Is(err, ErrInvalidJSON) {
			return nil, nil, err
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, nil, invalidJSON(s, lead, &jsonscan.Error{Off: int(se.Offset) - 1, Msg: se.Error()})
		}
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	if rest := strings.TrimSpace(t[r.dec.InputOffset():]); rest != "" {
		return nil, nil, trailingError(rest)
	}
	return d, r.problem, nil
}

// errTooDeep stops reading a document at its first level past MaxDataDepth: it is refused
// whatever follows, and reading no further keeps the stack bounded.
var errTooDeep = errors.New("too deep")

type reader struct {
	dec     *json.Decoder
	problem *Problem // the first datum the validator refuses whatever the schema
}

func (r *reader) refuse(p Problem) {
	if r.problem == nil {
		r.problem = &p
	}
}

// value reads one value at path, depth levels deep.
func (r *reader) value(path string, depth int) (*datum, error) {
	tok, err := r.dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &datum{kind: kindNull}, nil
	case bool:
		return &datum{kind: kindBool, b: t}, nil
	case json.Number:
		d := &datum{kind: kindNumber, text: string(t)}
		n, ok := parseDecimal(string(t))
		if !ok {
			r.refuse(Problem{Path: path, Keyword: "range", Message: fmt.Sprintf("a number whose exponent is beyond ±%d is out of range", int64(maxExponent))})
		}
		d.num = n
		return d, nil
	case string:
		return &datum{kind: kindString, text: t}, nil
	}
	if depth > MaxDataDepth {
		r.refuse(Problem{Path: path, Keyword: "depth", Message: fmt.Sprintf("data nests more than %d levels deep", MaxDataDepth)})
		return nil, errTooDeep
	}
	if tok == json.Delim('[') {
		d := &datum{kind: kindArray}
		for i := 0; r.dec.More(); i++ {
			el, err := r.value(path+"/"+strconv.Itoa(i), depth+1)
			if err != nil {
				return nil, err
			}
			d.arr = append(d.arr, el)
		}
		_, err := r.dec.Token()
		return d, err
	}
	d := &datum{kind: kindObject}
	var seen map[string]bool
	for r.dec.More() {
		kt, err := r.dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := kt.(string)
		if len(d.obj) == 8 {
			seen = make(map[string]bool, 16)
			for _, f := range d.obj {
				seen[f.name] = true
			}
		}
		dup := false
		if seen != nil {
			dup = seen[name]
			seen[name] = true
		} else {
			for _, f := range d.obj {
				dup = dup || f.name == name
			}
		}
		if dup {
			return nil, fmt.Errorf("%w: a member name appears twice in the object at %s", ErrInvalidJSON, showPointer(path))
		}
		el, err := r.value(ptr(path, name), depth+1)
		if err != nil {
			return nil, err
		}
		d.obj = append(d.obj, field{name: name, val: el})
	}
	_, err = r.dec.Token()
	return d, err
}

// get returns an object's member.
func (d *datum) get(name string) (*datum, bool) {
	for _, f := range d.obj {
		if f.name == name {
			return f.val, true
		}
	}
	return nil, false
}

// equal is JSON Schema's equality: numbers by value (1 is 1.0), objects whatever the order
// of their members.
func (d *datum) equal(o *datum) bool {
	if d.kind != o.kind {
		return false
	}
	switch d.kind {
	case kindNull:
		return true
	case kindBool:
		return d.b == o.b
	case kindNumber:
		return d.num.cmp(o.num) == 0
	case kindString:
		return d.text == o.text
	case kindArray:
		if len(d.arr) != len(o.arr) {
			return false
		}
		for i := range d.arr {
			if !d.arr[i].equal(o.arr[i]) {
				return false
			}
		}
		return true
	}
	if len(d.obj) != len(o.obj) {
		return false
	}
	for _, f := range d.obj {
		ov, ok := o.get(f.name)
		if !ok || !f.val.equal(ov) {
			return false
		}
	}
	return true
}

// datumOf converts a schema's value (enum, const); a repeated member name keeps the last
// value, as the strict checker reads it.
func datumOf(v *value) *datum {
	switch v.kind {
	case kindNull:
		return &datum{kind: kindNull}
	case kindBool:
		return &datum{kind: kindBool, b: v.b}
	case kindNumber:
		n, _ := parseDecimal(string(v.num))
		return &datum{kind: kindNumber, num: n, text: string(v.num)}
	case kindString:
		return &datum{kind: kindString, text: v.str}
	case kindArray:
		d := &datum{kind: kindArray}
		for _, el := range v.arr {
			d.arr = append(d.arr, datumOf(el))
		}
		return d
	}
	d := &datum{kind: kindObject}
	for _, m := range v.obj {
		if got := v.get(m.key); got == m.val {
			d.obj = append(d.obj, field{name: m.key, val: datumOf(m.val)})
		}
	}
	return d
}

// describe shows a value briefly: scalars as JSON, containers by kind.
func (d *datum) describe() string {
	switch d.kind {
	case kindNull:
		return "null"
	case kindBool:
		return strconv.FormatBool(d.b)
	case kindNumber:
		return truncate(d.text, 40)
	case kindString:
		return strconv.Quote(truncate(d.text, 40))
	case kindArray:
		return "an array"
	}
	return "an object"
}

func (d *datum) jsonType() string {
	switch d.kind {
	case kindNull:
		return "null"
	case kindBool:
		return "boolean"
	case kindNumber:
		if d.num.isInteger() {
			return "integer"
		}
		return "number"
	case kindString:
		return "string"
	case kindArray:
		return "array"
	}
	return "object"
}
