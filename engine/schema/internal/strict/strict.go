// Package strict checks a schema against the strict structured-output rules (see the
// package schema's documentation), with every violation where it is.
package strict

import (
	"fmt"
	"math"
	"regexp"
	"strconv"

	"github.com/crw-dev/crw/engine/schema/internal/jsontree"
)

// Limits of a strict schema.
const (
	MaxDepth      = 10   // levels of nested object and array schemas, the root object being level 1
	MaxProperties = 5000 // properties across the whole schema, $defs included
	MaxEnumValues = 1000 // enum values across the whole schema
)

// Rule names of a Violation. They are stable: callers and users match on them.
const (
	RuleRootNotObject        = "root_not_object"
	RuleAdditionalProperties = "additional_properties"
	RuleRequired             = "required"
	RuleKeyword              = "keyword"
	RuleDepth                = "depth"
	RulePropertiesCount      = "properties_count"
	RuleEnumCount            = "enum_count"
	RuleBadRef               = "bad_ref"
	RuleRefCycle             = "ref_cycle"
	RuleType                 = "type"
	RuleInvalid              = "invalid"
)

// Violation is one way a schema breaks the strict rules.
type Violation struct {
	// Pointer is an RFC 6901 JSON pointer into the schema; the root is "".
	Pointer string `json:"pointer"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// String reads like `/properties/steps/items: additional_properties: objects must set
// "additionalProperties": false`; the root pointer prints as "(root)".
func (v Violation) String() string {
	return jsontree.ShowPointer(v.Pointer) + ": " + v.Rule + ": " + v.Message
}

// allowedKeywords is the whole list: anything else, annotations such as title or default
// included, is refused, because the strict mode accepts only what it lists.
var allowedKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "enum": true, "const": true, "anyOf": true, "$defs": true, "$ref": true,
	"description": true, "pattern": true, "format": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minItems": true, "maxItems": true,
}

// keywordHints say what to write instead of a refused keyword.
var keywordHints = map[string]string{
	"oneOf":                 "use anyOf",
	"allOf":                 "merge the subschemas into one",
	"definitions":           "use $defs",
	"title":                 "use description",
	"default":               "describe the default in description",
	"examples":              "put examples in description",
	"minLength":             "use pattern",
	"maxLength":             "use pattern",
	"patternProperties":     "list the properties",
	"unevaluatedProperties": `use "additionalProperties": false`,
	"propertyNames":         "list the properties",
	"prefixItems":           "use an object with named properties",
}

// Check checks a schema against the strict structured-output rules and returns
// every violation, in the order a walk of the document meets them: a schema's own
// problems first, then its keywords in document order, each subschema as it comes.
//
// Levels of nesting (rule depth) count object and array schemas: the root object is
// level 1, an object or array schema inside it level 2, and so on; anyOf branches and
// $ref sit at the level of the schema holding them, and a $ref counts the levels of its
// target (a recursive reference is counted once). Properties and enum values are
// counted as written, $defs included. A $ref may recurse only through properties or
// items (rule ref_cycle), which move into a smaller part of the document.
func Check(root *jsontree.Value) []Violation {
	c := &checker{
		defLevels:  map[string]int{},
		inProgress: map[string]bool{},
	}
	c.check(root)
	return c.out
}

type checker struct {
	defs       map[string]*jsontree.Value // the root's $defs, the only target of a $ref
	out        []Violation
	props      int
	propsAt    int // index in out of the properties_count violation, or -1
	enums      int
	enumsAt    int
	defLevels  map[string]int
	inProgress map[string]bool
}

func (c *checker) add(pointer, rule, format string, args ...any) {
	c.out = append(c.out, Violation{Pointer: pointer, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) check(root *jsontree.Value) {
	c.propsAt, c.enumsAt = -1, -1
	if root.Kind != jsontree.KindObject {
		c.add("", RuleRootNotObject, `the root must be a schema object with "type": "object"`)
		return
	}
	if ts := typeSet(root.Get("type")); len(ts) != 1 || !ts["object"] {
		c.add("", RuleRootNotObject, `the root schema must have "type": "object"`)
	}
	if d := root.Get("$defs"); d != nil && d.Kind == jsontree.KindObject {
		c.defs = map[string]*jsontree.Value{}
		for _, m := range d.Obj {
			c.defs[m.Key] = m.Val
		}
	}
	c.schema(root, "", 0, false)
	for _, cy := range jsontree.Cycles(root) {
		c.add(cy.At, RuleRefCycle, "the $ref cycle %s passes through no \"properties\" or \"items\": no value can satisfy it", cy)
	}
	// The counts are known only at the end; the message says the total.
	if c.propsAt >= 0 {
		c.out[c.propsAt].Message = fmt.Sprintf("the schema has %d properties in total; the limit is %d", c.props, MaxProperties)
	}
	if c.enumsAt >= 0 {
		c.out[c.enumsAt].Message = fmt.Sprintf("the schema has %d enum values in total; the limit is %d", c.enums, MaxEnumValues)
	}
}

// schema checks one subschema. outer is the nesting level of the closest enclosing
// object or array schema; deep says a depth violation was already reported above.
func (c *checker) schema(v *jsontree.Value, p string, outer int, deep bool) {
	if v.Kind != jsontree.KindObject {
		c.add(p, RuleInvalid, "a schema must be a JSON object")
		return
	}
	level := outer
	if isContainer(v) {
		level++
		if level > MaxDepth && !deep {
			c.add(p, RuleDepth, "nesting level %d exceeds the limit of %d", level, MaxDepth)
			deep = true
		}
	}

	types := c.checkType(v, p)
	props := v.Get("properties")
	if types["object"] || props != nil {
		if ap := v.Get("additionalProperties"); ap == nil {
			c.add(p, RuleAdditionalProperties, `objects must set "additionalProperties": false`)
		}
	}
	if ap := v.Get("additionalProperties"); ap != nil && (ap.Kind != jsontree.KindBool || ap.Bool) {
		c.add(jsontree.Ptr(p, "additionalProperties"), RuleAdditionalProperties, `"additionalProperties" must be false`)
	}
	c.checkRequired(v, p, props)

	seen := map[string]bool{}
	for _, m := range v.Obj {
		kp := jsontree.Ptr(p, m.Key)
		if seen[m.Key] {
			c.add(kp, RuleInvalid, "keyword %q appears more than once", m.Key)
			continue
		}
		seen[m.Key] = true
		c.keyword(m.Key, m.Val, kp, place{outer: outer, level: level, deep: deep})
	}
	c.checkBounds(v, p)
}

// place is where a subschema stands: the level of the closest enclosing object or array
// schema (outer), its own level (level, outer+1 for an object or array schema), and whether
// a depth violation was reported above it (deep).
type place struct {
	outer, level int
	deep         bool
}

// keyword checks one keyword of a schema, and the subschemas it holds.
func (c *checker) keyword(key string, val *jsontree.Value, kp string, at place) {
	switch key {
	case "type", "required", "additionalProperties", "const":
		// checked by schema, or any value will do
	case "properties":
		c.properties(val, kp, at)
	case "items":
		switch val.Kind {
		case jsontree.KindObject:
			c.schema(val, kp, at.level, at.deep)
		case jsontree.KindArray:
			c.add(kp, RuleInvalid, `"items" must be one schema; the tuple form is not supported`)
		default:
			c.add(kp, RuleInvalid, `"items" must be a schema object`)
		}
	case "enum":
		c.enum(val, kp)
	case "anyOf":
		if val.Kind != jsontree.KindArray || len(val.Arr) == 0 {
			c.add(kp, RuleInvalid, `"anyOf" must be a non-empty array of schemas`)
			return
		}
		// A branch stands where the schema holding it stands.
		for i, b := range val.Arr {
			c.schema(b, jsontree.PtrIndex(kp, i), at.outer, at.deep)
		}
	case "$defs":
		if val.Kind != jsontree.KindObject {
			c.add(kp, RuleInvalid, `"$defs" must be an object of schemas`)
			return
		}
		// A definition is checked on its own; its uses are checked at each $ref.
		for _, dm := range val.Obj {
			c.schema(dm.Val, jsontree.Ptr(kp, dm.Key), 0, false)
		}
	case "$ref":
		name, ok := c.refName(val)
		if !ok {
			c.add(kp, RuleBadRef, `"$ref" must be a local "#/$defs/<name>" reference to a definition of the root`)
			return
		}
		if total := at.outer + c.levelsOfDef(name); total > MaxDepth && !at.deep {
			c.add(kp, RuleDepth, "nesting reaches level %d through %q; the limit is %d", total, val.Str, MaxDepth)
		}
	default:
		c.scalarKeyword(key, val, kp)
	}
}

// properties checks a schema's properties, each a subschema, and counts them.
func (c *checker) properties(val *jsontree.Value, kp string, at place) {
	if val.Kind != jsontree.KindObject {
		c.add(kp, RuleInvalid, `"properties" must be an object of schemas`)
		return
	}
	names := map[string]bool{}
	for _, pm := range val.Obj {
		pp := jsontree.Ptr(kp, pm.Key)
		if names[pm.Key] {
			c.add(pp, RuleInvalid, "property %q is defined more than once", pm.Key)
			continue
		}
		names[pm.Key] = true
		c.props++
		if c.props > MaxProperties && c.propsAt < 0 {
			c.propsAt = len(c.out)
			c.add(pp, RulePropertiesCount, "")
		}
		c.schema(pm.Val, pp, at.level, at.deep)
	}
}

// enum checks an enum and counts its values.
func (c *checker) enum(val *jsontree.Value, kp string) {
	if val.Kind != jsontree.KindArray || len(val.Arr) == 0 {
		c.add(kp, RuleInvalid, `"enum" must be a non-empty array`)
		return
	}
	for i := range val.Arr {
		c.enums++
		if c.enums > MaxEnumValues && c.enumsAt < 0 {
			c.enumsAt = len(c.out)
			c.add(jsontree.PtrIndex(kp, i), RuleEnumCount, "")
		}
	}
}

// scalarKeyword checks a keyword that holds no subschema, or one not allowed.
func (c *checker) scalarKeyword(key string, val *jsontree.Value, kp string) {
	switch key {
	case "description", "format":
		if val.Kind != jsontree.KindString {
			c.add(kp, RuleInvalid, "%q must be a string", key)
		}
	case "pattern":
		if val.Kind != jsontree.KindString {
			c.add(kp, RuleInvalid, `"pattern" must be a string`)
		} else if _, err := regexp.Compile(val.Str); err != nil {
			c.add(kp, RuleInvalid, `"pattern" is not a valid regular expression: %v`, err)
		}
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		if _, ok := val.Float(); !ok {
			c.add(kp, RuleInvalid, "%q must be a number", key)
		}
	case "multipleOf":
		if f, ok := val.Float(); !ok || f <= 0 {
			c.add(kp, RuleInvalid, `"multipleOf" must be a number greater than 0`)
		}
	case "minItems", "maxItems":
		if _, ok := val.Count(); !ok {
			c.add(kp, RuleInvalid, "%q must be a non-negative integer", key)
		}
	default:
		msg := fmt.Sprintf("keyword %q is not allowed in a strict schema", key)
		if h := keywordHints[key]; h != "" {
			msg += "; " + h
		}
		c.add(kp, RuleKeyword, "%s", msg)
	}
}

// checkType reports a malformed type and returns the named types.
func (c *checker) checkType(v *jsontree.Value, p string) map[string]bool {
	t := v.Get("type")
	if t == nil {
		return nil
	}
	tp := jsontree.Ptr(p, "type")
	switch t.Kind {
	case jsontree.KindString:
		if !jsontree.IsTypeName(t.Str) {
			c.add(tp, RuleType, "%q is not a JSON Schema type", t.Str)
		}
	case jsontree.KindArray:
		if len(t.Arr) == 0 {
			c.add(tp, RuleType, "an empty type array allows no value")
		}
		seen := map[string]bool{}
		for i, el := range t.Arr {
			switch {
			case el.Kind != jsontree.KindString:
				c.add(jsontree.PtrIndex(tp, i), RuleType, "a type must be a string")
			case !jsontree.IsTypeName(el.Str):
				c.add(jsontree.PtrIndex(tp, i), RuleType, "%q is not a JSON Schema type", el.Str)
			case seen[el.Str]:
				c.add(jsontree.PtrIndex(tp, i), RuleType, "%q is listed more than once", el.Str)
			}
			if el.Kind == jsontree.KindString {
				seen[el.Str] = true
			}
		}
	default:
		c.add(tp, RuleType, `"type" must be a type name or an array of type names`)
	}
	return typeSet(t)
}

func (c *checker) checkRequired(v *jsontree.Value, p string, props *jsontree.Value) {
	req := v.Get("required")
	listed := map[string]bool{}
	defined := map[string]bool{}
	if props != nil && props.Kind == jsontree.KindObject {
		for _, m := range props.Obj {
			defined[m.Key] = true
		}
	}
	if req != nil {
		rp := jsontree.Ptr(p, "required")
		if req.Kind != jsontree.KindArray {
			c.add(rp, RuleInvalid, `"required" must be an array of property names`)
		} else {
			for i, el := range req.Arr {
				switch {
				case el.Kind != jsontree.KindString:
					c.add(jsontree.PtrIndex(rp, i), RuleInvalid, "a required name must be a string")
				case listed[el.Str]:
					c.add(jsontree.PtrIndex(rp, i), RuleRequired, "%q is listed more than once", el.Str)
				case !defined[el.Str]:
					c.add(jsontree.PtrIndex(rp, i), RuleRequired, "%q is required but not defined in \"properties\"", el.Str)
				}
				if el.Kind == jsontree.KindString {
					listed[el.Str] = true
				}
			}
		}
	}
	if props == nil || props.Kind != jsontree.KindObject || (req != nil && req.Kind != jsontree.KindArray) {
		return
	}
	reported := map[string]bool{}
	for _, m := range props.Obj {
		if !listed[m.Key] && !reported[m.Key] {
			reported[m.Key] = true
			c.add(jsontree.Ptr(p, "properties", m.Key), RuleRequired,
				"property %q must be listed in \"required\"; make it nullable to let it be empty", m.Key)
		}
	}
}

// checkBounds refuses bounds no value can meet.
func (c *checker) checkBounds(v *jsontree.Value, p string) {
	lo, okLo := v.Get("minItems").Count()
	hi, okHi := v.Get("maxItems").Count()
	if okLo && okHi && lo > hi {
		c.add(jsontree.Ptr(p, "minItems"), RuleInvalid, "minItems %d is greater than maxItems %d", lo, hi)
	}
	minimum, okMin := v.Get("minimum").Float()
	maximum, okMax := v.Get("maximum").Float()
	if okMin && okMax && minimum > maximum {
		c.add(jsontree.Ptr(p, "minimum"), RuleInvalid, "minimum %s is greater than maximum %s", formatNumber(minimum), formatNumber(maximum))
	}
}

// refName returns the definition a $ref names, if it is "#/$defs/<name>" and exists.
func (c *checker) refName(ref *jsontree.Value) (string, bool) {
	name, ok := jsontree.DefName(ref)
	if !ok {
		return "", false
	}
	if _, ok := c.defs[name]; !ok {
		return "", false
	}
	return name, true
}

// levelsOfDef is how many levels a definition adds where it is referenced.
func (c *checker) levelsOfDef(name string) int {
	if n, ok := c.defLevels[name]; ok {
		return n
	}
	if c.inProgress[name] {
		return 0 // recursion counts once
	}
	c.inProgress[name] = true
	n := c.levels(c.defs[name])
	delete(c.inProgress, name)
	c.defLevels[name] = n
	return n
}

// levels is the depth of v's subtree, counted from its parent's level.
func (c *checker) levels(v *jsontree.Value) int {
	if v == nil || v.Kind != jsontree.KindObject {
		return 0
	}
	inner := 0
	if props := v.Get("properties"); props != nil && props.Kind == jsontree.KindObject {
		for _, m := range props.Obj {
			inner = max(inner, c.levels(m.Val))
		}
	}
	if items := v.Get("items"); items != nil {
		inner = max(inner, c.levels(items))
	}
	n := inner
	if isContainer(v) {
		n++
	}
	if alts := v.Get("anyOf"); alts != nil && alts.Kind == jsontree.KindArray {
		for _, b := range alts.Arr {
			n = max(n, c.levels(b))
		}
	}
	if name, ok := c.refName(v.Get("$ref")); ok {
		n = max(n, c.levelsOfDef(name))
	}
	return n
}

// isContainer says whether v describes objects or arrays, which add a level of nesting.
func isContainer(v *jsontree.Value) bool {
	ts := typeSet(v.Get("type"))
	return ts["object"] || ts["array"] || v.Get("properties") != nil || v.Get("items") != nil
}

func typeSet(t *jsontree.Value) map[string]bool {
	if t == nil {
		return nil
	}
	set := map[string]bool{}
	switch t.Kind {
	case jsontree.KindString:
		set[t.Str] = true
	case jsontree.KindArray:
		for _, el := range t.Arr {
			if el.Kind == jsontree.KindString {
				set[el.Str] = true
			}
		}
	}
	return set
}

func formatNumber(f float64) string {
	if math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
