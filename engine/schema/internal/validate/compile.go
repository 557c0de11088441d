// Package validate compiles a schema of the strict subset into a Validator and holds
// documents to it: the subset implemented here (no JSON Schema library), numbers compared
// and divided as written (package decimal), each document read in one scan (package answer)
// into the values the validator walks.
package validate

import (
	"fmt"
	"regexp"

	"github.com/crw-dev/crw/engine/schema/internal/decimal"
	"github.com/crw-dev/crw/engine/schema/internal/jsontree"
)

// Validator validates documents against one schema, compiled once. It is safe for
// concurrent use.
//
// It validates the strict subset itself, over numbers exactly as written (see decimal.Decimal):
// type, properties, required, additionalProperties, items, enum, const, anyOf, $defs and
// $ref, pattern (Go's RE2 syntax), minimum, maximum, exclusiveMinimum, exclusiveMaximum,
// multipleOf, minItems and maxItems; description and format are annotations.
type Validator struct {
	root *node
}

// node is one compiled subschema.
type node struct {
	never      bool     // the schema false
	types      []string // nil: any type
	props      map[string]*node
	required   []string
	closed     bool  // "additionalProperties": false
	additional *node // another additionalProperties schema
	items      *node
	enum       []*datum
	constant   *datum
	anyOf      []*node
	ref        *node
	pattern    *regexp.Regexp
	bounds     []bound
	multipleOf *decimal.Divisor
	multText   string
	minItems   *decimal.Decimal
	maxItems   *decimal.Decimal
}

// bound is one of minimum, maximum, exclusiveMinimum, exclusiveMaximum.
type bound struct {
	keyword string
	limit   decimal.Decimal
	text    string // as the schema writes it
}

// annotations are keywords that say nothing about validity; Compile passes over them.
var annotations = map[string]bool{
	"description": true, "format": true, "title": true, "default": true, "examples": true,
	"$comment": true, "$schema": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// Compile reads a schema for validation. It does not apply the strict rules (package
// strict does), but it refuses what it cannot validate: a keyword outside the strict
// subset, a $ref other than "#/$defs/<name>", a $ref cycle through no properties or items
// (as the strict rules do), a malformed keyword. Its errors name where, in the schema.
func Compile(root *jsontree.Value) (*Validator, error) {
	if cycles := jsontree.Cycles(root); len(cycles) > 0 {
		return nil, fmt.Errorf("%s: the $ref cycle %s passes through no \"properties\" or \"items\"", jsontree.ShowPointer(cycles[0].At), cycles[0])
	}
	c := &compiler{defs: map[string]*node{}}
	if d := root.Get("$defs"); d != nil && d.Kind == jsontree.KindObject {
		c.defSrc = jsontree.LastMembers(d)
		for _, m := range d.Obj {
			c.defs[m.Key] = &node{}
		}
	}
	n, err := c.compile(root, "")
	for err == nil && len(c.pending) > 0 {
		name := c.pending[len(c.pending)-1]
		c.pending = c.pending[:len(c.pending)-1]
		err = c.fillDef(name)
	}
	if err != nil {
		return nil, err
	}
	return &Validator{root: n}, nil
}

type compiler struct {
	defSrc  map[string]*jsontree.Value
	defs    map[string]*node // allocated first, filled once, so that references share them
	queued  map[string]bool
	pending []string // definitions referenced and not filled yet: filled in a loop, not by recursion
}

func (c *compiler) fail(p, format string, args ...any) error {
	return fmt.Errorf("%s: %s", jsontree.ShowPointer(p), fmt.Sprintf(format, args...))
}

func (c *compiler) compile(v *jsontree.Value, p string) (*node, error) {
	if v.Kind == jsontree.KindBool {
		return &node{never: !v.Bool}, nil
	}
	if v.Kind != jsontree.KindObject {
		return nil, c.fail(p, "a schema must be a JSON object or a boolean")
	}
	n := &node{}
	return n, c.fill(n, v, p)
}

func (c *compiler) fill(n *node, v *jsontree.Value, p string) error {
	last := jsontree.LastMembers(v)
	for _, m := range v.Obj {
		if last[m.Key] != m.Val {
			continue // the last of a repeated keyword counts, as the strict checker reads it
		}
		if err := c.keyword(n, m.Key, m.Val, jsontree.Ptr(p, m.Key), p == ""); err != nil {
			return err
		}
	}
	return nil
}

// keyword compiles one keyword into n; atRoot says n is the root's.
func (c *compiler) keyword(n *node, key string, val *jsontree.Value, kp string, atRoot bool) error {
	var err error
	switch key {
	case "type":
		n.types, err = c.types(val, kp)
	case "properties":
		n.props, err = c.properties(val, kp)
	case "required":
		n.required, err = c.required(val, kp)
	case "additionalProperties":
		if val.Kind == jsontree.KindBool && !val.Bool {
			n.closed = true
		} else {
			n.additional, err = c.compile(val, kp)
		}
	case "items":
		n.items, err = c.compile(val, kp)
	case "enum":
		if val.Kind != jsontree.KindArray {
			return c.fail(kp, "must be an array")
		}
		n.enum = make([]*datum, 0, len(val.Arr))
		for _, el := range val.Arr {
			n.enum = append(n.enum, datumOf(el))
		}
	case "const":
		n.constant = datumOf(val)
	case "anyOf":
		n.anyOf, err = c.anyOf(val, kp)
	case "$ref":
		name, ok := jsontree.DefName(val)
		if !ok || c.defs[name] == nil {
			return c.fail(kp, `must be a local "#/$defs/<name>" reference to a definition of the root`)
		}
		n.ref = c.def(name)
	case "$defs":
		if val.Kind != jsontree.KindObject {
			return c.fail(kp, "must be an object of schemas")
		}
		if atRoot {
			for _, dm := range val.Obj {
				c.def(dm.Key)
			}
		}
	default:
		return c.constraint(n, key, val, kp)
	}
	return err
}

// constraint compiles a keyword on a scalar (pattern, bounds, multipleOf, minItems,
// maxItems), or passes over an annotation.
func (c *compiler) constraint(n *node, key string, val *jsontree.Value, kp string) error {
	if key == "pattern" {
		if val.Kind != jsontree.KindString {
			return c.fail(kp, "must be a string")
		}
		re, err := regexp.Compile(val.Str)
		if err != nil {
			return c.fail(kp, "not a valid regular expression: %v", err)
		}
		n.pattern = re
		return nil
	}
	switch key {
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems":
	default:
		if !annotations[key] {
			return c.fail(kp, "keyword %q is not supported", key)
		}
		return nil
	}
	d, err := c.number(val, kp)
	if err != nil {
		return err
	}
	switch key {
	case "multipleOf":
		if d.Sign() <= 0 {
			return c.fail(kp, "must be greater than 0")
		}
		n.multipleOf, n.multText = decimal.NewDivisor(d), string(val.Num)
	case "minItems", "maxItems":
		if d.Neg || !d.IsInteger() {
			return c.fail(kp, "must be a non-negative integer")
		}
		if key == "minItems" {
			n.minItems = &d
		} else {
			n.maxItems = &d
		}
	default:
		n.bounds = append(n.bounds, bound{keyword: key, limit: d, text: string(val.Num)})
	}
	return nil
}

func (c *compiler) properties(val *jsontree.Value, kp string) (map[string]*node, error) {
	if val.Kind != jsontree.KindObject {
		return nil, c.fail(kp, "must be an object of schemas")
	}
	out := make(map[string]*node, len(val.Obj))
	props := jsontree.LastMembers(val)
	for _, pm := range val.Obj {
		n, err := c.compile(props[pm.Key], jsontree.Ptr(kp, pm.Key))
		if err != nil {
			return nil, err
		}
		out[pm.Key] = n
	}
	return out, nil
}

func (c *compiler) required(val *jsontree.Value, kp string) ([]string, error) {
	if val.Kind != jsontree.KindArray {
		return nil, c.fail(kp, "must be an array of property names")
	}
	var out []string
	for _, el := range val.Arr {
		if el.Kind != jsontree.KindString {
			return nil, c.fail(kp, "must be an array of property names")
		}
		out = append(out, el.Str)
	}
	return out, nil
}

func (c *compiler) anyOf(val *jsontree.Value, kp string) ([]*node, error) {
	if val.Kind != jsontree.KindArray || len(val.Arr) == 0 {
		return nil, c.fail(kp, "must be a non-empty array of schemas")
	}
	var out []*node
	for i, b := range val.Arr {
		bn, err := c.compile(b, jsontree.PtrIndex(kp, i))
		if err != nil {
			return nil, err
		}
		out = append(out, bn)
	}
	return out, nil
}

// def is the node of a definition of the root, filled later, once.
func (c *compiler) def(name string) *node {
	if !c.queued[name] {
		if c.queued == nil {
			c.queued = map[string]bool{}
		}
		c.queued[name] = true
		c.pending = append(c.pending, name)
	}
	return c.defs[name]
}

func (c *compiler) fillDef(name string) error {
	n, v, p := c.defs[name], c.defSrc[name], jsontree.Ptr("/$defs", name)
	if v.Kind == jsontree.KindBool {
		n.never = !v.Bool
		return nil
	}
	if v.Kind != jsontree.KindObject {
		return c.fail(p, "a schema must be a JSON object or a boolean")
	}
	return c.fill(n, v, p)
}

func (c *compiler) types(v *jsontree.Value, p string) ([]string, error) {
	var out []string
	switch v.Kind {
	case jsontree.KindString:
		out = []string{v.Str}
	case jsontree.KindArray:
		for _, el := range v.Arr {
			if el.Kind != jsontree.KindString {
				return nil, c.fail(p, "must be a type name or an array of type names")
			}
			out = append(out, el.Str)
		}
	default:
		return nil, c.fail(p, "must be a type name or an array of type names")
	}
	for _, t := range out {
		if !jsontree.IsTypeName(t) {
			return nil, c.fail(p, "%q is not a JSON Schema type", t)
		}
	}
	return out, nil
}

func (c *compiler) number(v *jsontree.Value, p string) (decimal.Decimal, error) {
	if v.Kind != jsontree.KindNumber {
		return decimal.Decimal{}, c.fail(p, "must be a number")
	}
	d, ok := decimal.Parse(string(v.Num))
	if !ok {
		return decimal.Decimal{}, c.fail(p, "the number is out of range")
	}
	return d, nil
}
