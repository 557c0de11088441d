package schema

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
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
	return showPointer(v.Pointer) + ": " + v.Rule + ": " + v.Message
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

var typeNames = map[string]bool{
	"string": true, "number": true, "integer": true, "boolean": true,
	"object": true, "array": true, "null": true,
}

// CheckStrict checks a schema against the strict structured-output rules and returns
// every violation, in the order a walk of the document meets them: a schema's own
// problems first, then its keywords in document order, each subschema as it comes.
// The error is non-nil only when schema is not exactly one JSON value.
//
// Levels of nesting (rule depth) count object and array schemas: the root object is
// level 1, an object or array schema inside it level 2, and so on; anyOf branches and
// $ref sit at the level of the schema holding them, and a $ref counts the levels of its
// target (a recursive reference is counted once). Properties and enum values are
// counted as written, $defs included. A $ref may recurse only through properties or
// items (rule ref_cycle), which move into a smaller part of the document.
func CheckStrict(schema []byte) ([]Violation, error) {
	root, err := parseJSON(schema)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	c := &checker{
		defLevels:  map[string]int{},
		inProgress: map[string]bool{},
	}
	c.check(root)
	return c.out, nil
}

type checker struct {
	defs       map[string]*value // the root's $defs, the only target of a $ref
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

func (c *checker) check(root *value) {
	c.propsAt, c.enumsAt = -1, -1
	if root.kind != kindObject {
		c.add("", RuleRootNotObject, `the root must be a schema object with "type": "object"`)
		return
	}
	if ts := typeSet(root.get("type")); len(ts) != 1 || !ts["object"] {
		c.add("", RuleRootNotObject, `the root schema must have "type": "object"`)
	}
	if d := root.get("$defs"); d != nil && d.kind == kindObject {
		c.defs = map[string]*value{}
		for _, m := range d.obj {
			c.defs[m.key] = m.val
		}
	}
	c.schema(root, "", 0, false)
	for _, cy := range refCycles(root) {
		c.add(cy.at, RuleRefCycle, "the $ref cycle %s passes through no \"properties\" or \"items\": no value can satisfy it", cy)
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
func (c *checker) schema(v *value, p string, outer int, deep bool) {
	if v.kind != kindObject {
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
	props := v.get("properties")
	if types["object"] || props != nil {
		if ap := v.get("additionalProperties"); ap == nil {
			c.add(p, RuleAdditionalProperties, `objects must set "additionalProperties": false`)
		}
	}
	if ap := v.get("additionalProperties"); ap != nil && (ap.kind != kindBool || ap.b) {
		c.add(ptr(p, "additionalProperties"), RuleAdditionalProperties, `"additionalProperties" must be false`)
	}
	c.checkRequired(v, p, props)

	seen := map[string]bool{}
	for _, m := range v.obj {
		kp := ptr(p, m.key)
		if seen[m.key] {
			c.add(kp, RuleInvalid, "keyword %q appears more than once", m.key)
			continue
		}
		seen[m.key] = true
		val := m.val
		switch m.key {
		case "type", "required", "additionalProperties", "const":
			// checked above, or any value will do
		case "properties":
			if val.kind != kindObject {
				c.add(kp, RuleInvalid, `"properties" must be an object of schemas`)
				continue
			}
			names := map[string]bool{}
			for _, pm := range val.obj {
				pp := ptr(kp, pm.key)
				if names[pm.key] {
					c.add(pp, RuleInvalid, "property %q is defined more than once", pm.key)
					continue
				}
				names[pm.key] = true
				c.props++
				if c.props > MaxProperties && c.propsAt < 0 {
					c.propsAt = len(c.out)
					c.add(pp, RulePropertiesCount, "")
				}
				c.schema(pm.val, pp, level, deep)
			}
		case "items":
			switch val.kind {
			case kindObject:
				c.schema(val, kp, level, deep)
			case kindArray:
				c.add(kp, RuleInvalid, `"items" must be one schema; the tuple form is not supported`)
			default:
				c.add(kp, RuleInvalid, `"items" must be a schema object`)
			}
		case "enum":
			if val.kind != kindArray || len(val.arr) == 0 {
				c.add(kp, RuleInvalid, `"enum" must be a non-empty array`)
				continue
			}
			for i := range val.arr {
				c.enums++
				if c.enums > MaxEnumValues && c.enumsAt < 0 {
					c.enumsAt = len(c.out)
					c.add(ptrIndex(kp, i), RuleEnumCount, "")
				}
			}
		case "anyOf":
			if val.kind != kindArray || len(val.arr) == 0 {
				c.add(kp, RuleInvalid, `"anyOf" must be a non-empty array of schemas`)
				continue
			}
			// A branch stands where the schema holding it stands.
			for i, b := range val.arr {
				c.schema(b, ptrIndex(kp, i), outer, deep)
			}
		case "$defs":
			if val.kind != kindObject {
				c.add(kp, RuleInvalid, `"$defs" must be an object of schemas`)
				continue
			}
			// A definition is checked on its own; its uses are checked at each $ref.
			for _, dm := range val.obj {
				c.schema(dm.val, ptr(kp, dm.key), 0, false)
			}
		case "$ref":
			name, ok := c.refName(val)
			if !ok {
				c.add(kp, RuleBadRef, `"$ref" must be a local "#/$defs/<name>" reference to a definition of the root`)
				continue
			}
			if total := outer + c.levelsOfDef(name); total > MaxDepth && !deep {
				c.add(kp, RuleDepth, "nesting reaches level %d through %q; the limit is %d", total, val.str, MaxDepth)
			}
		case "description", "format":
			if val.kind != kindString {
				c.add(kp, RuleInvalid, "%q must be a string", m.key)
			}
		case "pattern":
			if val.kind != kindString {
				c.add(kp, RuleInvalid, `"pattern" must be a string`)
			} else if _, err := regexp.Compile(val.str); err != nil {
				c.add(kp, RuleInvalid, `"pattern" is not a valid regular expression: %v`, err)
			}
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			if _, ok := number(val); !ok {
				c.add(kp, RuleInvalid, "%q must be a number", m.key)
			}
		case "multipleOf":
			if f, ok := number(val); !ok || f <= 0 {
				c.add(kp, RuleInvalid, `"multipleOf" must be a number greater than 0`)
			}
		case "minItems", "maxItems":
			if _, ok := count(val); !ok {
				c.add(kp, RuleInvalid, "%q must be a non-negative integer", m.key)
			}
		default:
			msg := fmt.Sprintf("keyword %q is not allowed in a strict schema", m.key)
			if h := keywordHints[m.key]; h != "" {
				msg += "; " + h
			}
			c.add(kp, RuleKeyword, "%s", msg)
		}
	}
	c.checkBounds(v, p)
}

// checkType reports a malformed type and returns the named types.
func (c *checker) checkType(v *value, p string) map[string]bool {
	t := v.get("type")
	if t == nil {
		return nil
	}
	tp := ptr(p, "type")
	switch t.kind {
	case kindString:
		if !typeNames[t.str] {
			c.add(tp, RuleType, "%q is not a JSON Schema type", t.str)
		}
	case kindArray:
		if len(t.arr) == 0 {
			c.add(tp, RuleType, "an empty type array allows no value")
		}
		seen := map[string]bool{}
		for i, el := range t.arr {
			switch {
			case el.kind != kindString:
				c.add(ptrIndex(tp, i), RuleType, "a type must be a string")
			case !typeNames[el.str]:
				c.add(ptrIndex(tp, i), RuleType, "%q is not a JSON Schema type", el.str)
			case seen[el.str]:
				c.add(ptrIndex(tp, i), RuleType, "%q is listed more than once", el.str)
			}
			if el.kind == kindString {
				seen[el.str] = true
			}
		}
	default:
		c.add(tp, RuleType, `"type" must be a type name or an array of type names`)
	}
	return typeSet(t)
}

func (c *checker) checkRequired(v *value, p string, props *value) {
	req := v.get("required")
	listed := map[string]bool{}
	defined := map[string]bool{}
	if props != nil && props.kind == kindObject {
		for _, m := range props.obj {
			defined[m.key] = true
		}
	}
	if req != nil {
		rp := ptr(p, "required")
		if req.kind != kindArray {
			c.add(rp, RuleInvalid, `"required" must be an array of property names`)
		} else {
			for i, el := range req.arr {
				switch {
				case el.kind != kindString:
					c.add(ptrIndex(rp, i), RuleInvalid, "a required name must be a string")
				case listed[el.str]:
					c.add(ptrIndex(rp, i), RuleRequired, "%q is listed more than once", el.str)
				case !defined[el.str]:
					c.add(ptrIndex(rp, i), RuleRequired, "%q is required but not defined in \"properties\"", el.str)
				}
				if el.kind == kindString {
					listed[el.str] = true
				}
			}
		}
	}
	if props == nil || props.kind != kindObject || (req != nil && req.kind != kindArray) {
		return
	}
	reported := map[string]bool{}
	for _, m := range props.obj {
		if !listed[m.key] && !reported[m.key] {
			reported[m.key] = true
			c.add(ptr(p, "properties", m.key), RuleRequired,
				"property %q must be listed in \"required\"; make it nullable to let it be empty", m.key)
		}
	}
}

// checkBounds refuses bounds no value can meet.
func (c *checker) checkBounds(v *value, p string) {
	lo, okLo := count(v.get("minItems"))
	hi, okHi := count(v.get("maxItems"))
	if okLo && okHi && lo > hi {
		c.add(ptr(p, "minItems"), RuleInvalid, "minItems %d is greater than maxItems %d", lo, hi)
	}
	minimum, okMin := number(v.get("minimum"))
	maximum, okMax := number(v.get("maximum"))
	if okMin && okMax && minimum > maximum {
		c.add(ptr(p, "minimum"), RuleInvalid, "minimum %s is greater than maximum %s", formatNumber(minimum), formatNumber(maximum))
	}
}

// refName returns the definition a $ref names, if it is "#/$defs/<name>" and exists.
func (c *checker) refName(ref *value) (string, bool) {
	name, ok := defName(ref)
	if !ok {
		return "", false
	}
	if _, ok := c.defs[name]; !ok {
		return "", false
	}
	return name, true
}

func defName(ref *value) (string, bool) {
	if ref == nil || ref.kind != kindString {
		return "", false
	}
	tok, ok := strings.CutPrefix(ref.str, "#/$defs/")
	if !ok || tok == "" || strings.Contains(tok, "/") {
		return "", false
	}
	return pointerUnescaper.Replace(tok), true
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
func (c *checker) levels(v *value) int {
	if v == nil || v.kind != kindObject {
		return 0
	}
	inner := 0
	if props := v.get("properties"); props != nil && props.kind == kindObject {
		for _, m := range props.obj {
			inner = max(inner, c.levels(m.val))
		}
	}
	if items := v.get("items"); items != nil {
		inner = max(inner, c.levels(items))
	}
	n := inner
	if isContainer(v) {
		n++
	}
	if alts := v.get("anyOf"); alts != nil && alts.kind == kindArray {
		for _, b := range alts.arr {
			n = max(n, c.levels(b))
		}
	}
	if name, ok := c.refName(v.get("$ref")); ok {
		n = max(n, c.levelsOfDef(name))
	}
	return n
}

// isContainer says whether v describes objects or arrays, which add a level of nesting.
func isContainer(v *value) bool {
	ts := typeSet(v.get("type"))
	return ts["object"] || ts["array"] || v.get("properties") != nil || v.get("items") != nil
}

func typeSet(t *value) map[string]bool {
	if t == nil {
		return nil
	}
	set := map[string]bool{}
	switch t.kind {
	case kindString:
		set[t.str] = true
	case kindArray:
		for _, el := range t.arr {
			if el.kind == kindString {
				set[el.str] = true
			}
		}
	}
	return set
}

// number reads a finite number.
func number(v *value) (float64, bool) {
	if v == nil || v.kind != kindNumber {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v.num), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// count reads a non-negative integer written plainly, without an exponent (1.0 is fine,
// 1e2 is not), and within 32 bits: a form any reader of the schema takes as a count.
func count(v *value) (int, bool) {
	f, ok := number(v)
	if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 || strings.ContainsAny(string(v.num), "eE") {
		return 0, false
	}
	return int(f), true
}
