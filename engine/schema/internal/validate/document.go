package validate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/crw-dev/crw/engine/schema/internal/decimal"
	"github.com/crw-dev/crw/engine/schema/internal/jsonscan"
	"github.com/crw-dev/crw/engine/schema/internal/jsontree"
)

// datum is one value of a document being validated; numbers keep their written form.
type datum struct {
	kind jsontree.Kind
	b    bool
	num  decimal.Decimal
	text string // a string's value, a number as written
	arr  []*datum
	obj  []field // in document order, names unique (the scanner refuses a name twice)
}

type field struct {
	name string
	val  *datum
}

// builder makes a document's datums as the scanner reads it (a jsonscan.Builder). A number
// beyond decimal.MaxExponent is JSON but not acceptable data: the first one is refused, a
// problem whatever the schema.
type builder struct {
	root    *datum
	open    []*datum // the arrays and objects not closed yet
	key     string   // the name of the next member
	refused *Problem
}

func (b *builder) add(d *datum) {
	if len(b.open) == 0 {
		b.root = d
		return
	}
	top := b.open[len(b.open)-1]
	if top.kind == jsontree.KindObject {
		top.obj = append(top.obj, field{name: b.key, val: d})
	} else {
		top.arr = append(top.arr, d)
	}
}

func (b *builder) Open(obj bool) {
	d := &datum{kind: jsontree.ContainerKind(obj)}
	b.add(d)
	b.open = append(b.open, d)
}

func (b *builder) Key(name string) { b.key = name }

func (b *builder) Close() { b.open = b.open[:len(b.open)-1] }

func (b *builder) Scalar(kind jsonscan.Kind, text string) {
	switch kind {
	case jsonscan.String:
		b.add(&datum{kind: jsontree.KindString, text: text})
	case jsonscan.Number:
		n, ok := decimal.Parse(text)
		if !ok && b.refused == nil {
			b.refused = &Problem{Path: b.path(), Keyword: "range", Message: fmt.Sprintf("a number whose exponent is beyond ±%d is out of range", int64(decimal.MaxExponent))}
		}
		b.add(&datum{kind: jsontree.KindNumber, num: n, text: text})
	case jsonscan.True:
		b.add(&datum{kind: jsontree.KindBool, b: true})
	case jsonscan.False:
		b.add(&datum{kind: jsontree.KindBool})
	default:
		b.add(&datum{kind: jsontree.KindNull})
	}
}

// path is the pointer of the value about to be added: the member or element each open
// array or object is at.
func (b *builder) path() string {
	var p strings.Builder
	for i, d := range b.open {
		top := i == len(b.open)-1
		var token string
		switch {
		case d.kind == jsontree.KindArray && top:
			token = strconv.Itoa(len(d.arr))
		case d.kind == jsontree.KindArray:
			token = strconv.Itoa(len(d.arr) - 1)
		case top:
			token = b.key
		default:
			token = d.obj[len(d.obj)-1].name
		}
		p.WriteString(jsontree.Ptr("", token))
	}
	return p.String()
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
	case jsontree.KindNull:
		return true
	case jsontree.KindBool:
		return d.b == o.b
	case jsontree.KindNumber:
		return d.num.Cmp(o.num) == 0
	case jsontree.KindString:
		return d.text == o.text
	case jsontree.KindArray:
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
func datumOf(v *jsontree.Value) *datum {
	switch v.Kind {
	case jsontree.KindNull:
		return &datum{kind: jsontree.KindNull}
	case jsontree.KindBool:
		return &datum{kind: jsontree.KindBool, b: v.Bool}
	case jsontree.KindNumber:
		n, _ := decimal.Parse(string(v.Num))
		return &datum{kind: jsontree.KindNumber, num: n, text: string(v.Num)}
	case jsontree.KindString:
		return &datum{kind: jsontree.KindString, text: v.Str}
	case jsontree.KindArray:
		d := &datum{kind: jsontree.KindArray}
		for _, el := range v.Arr {
			d.arr = append(d.arr, datumOf(el))
		}
		return d
	}
	d := &datum{kind: jsontree.KindObject}
	for _, m := range v.Obj {
		if got := v.Get(m.Key); got == m.Val {
			d.obj = append(d.obj, field{name: m.Key, val: datumOf(m.Val)})
		}
	}
	return d
}

// describe shows a value briefly: scalars as JSON, containers by kind.
func (d *datum) describe() string {
	switch d.kind {
	case jsontree.KindNull:
		return "null"
	case jsontree.KindBool:
		return strconv.FormatBool(d.b)
	case jsontree.KindNumber:
		return truncate(d.text, 40)
	case jsontree.KindString:
		return strconv.Quote(truncate(d.text, 40))
	case jsontree.KindArray:
		return "an array"
	}
	return "an object"
}

func (d *datum) jsonType() string {
	switch d.kind {
	case jsontree.KindNull:
		return "null"
	case jsontree.KindBool:
		return "boolean"
	case jsontree.KindNumber:
		if d.num.IsInteger() {
			return "integer"
		}
		return "number"
	case jsontree.KindString:
		return "string"
	case jsontree.KindArray:
		return "array"
	}
	return "object"
}
