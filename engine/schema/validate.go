package schema

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Validator validates documents against one schema, compiled once. It is safe for
// concurrent use.
//
// It validates the strict subset itself, over numbers exactly as written (see decimal):
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
	multipleOf *divisor
	multText   string
	minItems   *decimal
	maxItems   *decimal
}

// bound is one of minimum, maximum, exclusiveMinimum, exclusiveMaximum.
type bound struct {
	keyword string
	limit   decimal
	text    string // as the schema writes it
}

// annotations are keywords that say nothing about validity; Compile passes over them.
var annotations = map[string]bool{
	"description": true, "format": true, "title": true, "default": true, "examples": true,
	"$comment": true, "$schema": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// Compile reads a schema for validation. It does not apply the strict rules (call
// CheckStrict for that), but it refuses what it cannot validate: a keyword outside the
// strict subset, a $ref other than "#/$defs/<name>", a $ref cycle through no properties
// or items (as CheckStrict does), a malformed keyword.
func Compile(schema []byte) (*Validator, error) {
	root, err := parseJSON(schema)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if cycles := refCycles(root); len(cycles) > 0 {
		return nil, fmt.Errorf("schema: %s: the $ref cycle %s passes through no \"properties\" or \"items\"", showPointer(cycles[0].at), cycles[0])
	}
	c := &compiler{defs: map[string]*node{}}
	if d := root.get("$defs"); d != nil && d.kind == kindObject {
		c.defSrc = lastMembers(d)
		for _, m := range d.obj {
			c.defs[m.key] = &node{}
		}
	}
	n, err := c.compile(root, "")
	for err == nil && len(c.pending) > 0 {
		name := c.pending[len(c.pending)-1]
		c.pending = c.pending[:len(c.pending)-1]
		err = c.fillDef(name)
	}
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return &Validator{root: n}, nil
}

type compiler struct {
	defSrc  map[string]*value
	defs    map[string]*node // allocated first, filled once, so that references share them
	queued  map[string]bool
	pending []string // definitions referenced and not filled yet: filled in a loop, not by recursion
}

func (c *compiler) fail(p, format string, args ...any) error {
	return fmt.Errorf("%s: %s", showPointer(p), fmt.Sprintf(format, args...))
}

func (c *compiler) compile(v *value, p string) (*node, error) {
	if v.kind == kindBool {
		return &node{never: !v.b}, nil
	}
	if v.kind != kindObject {
		return nil, c.fail(p, "a schema must be a JSON object or a boolean")
	}
	n := &node{}
	return n, c.fill(n, v, p)
}

func (c *compiler) fill(n *node, v *value, p string) error {
	last := lastMembers(v)
	for _, m := range v.obj {
		if last[m.key] != m.val {
			continue // the last of a repeated keyword counts, as the strict checker reads it
		}
		kp := ptr(p, m.key)
		val := m.val
		var err error
		switch m.key {
		case "type":
			n.types, err = c.types(val, kp)
		case "properties":
			if val.kind != kindObject {
				return c.fail(kp, "must be an object of schemas")
			}
			n.props = make(map[string]*node, len(val.obj))
			props := lastMembers(val)
			for _, pm := range val.obj {
				if n.props[pm.key], err = c.compile(props[pm.key], ptr(kp, pm.key)); err != nil {
					return err
				}
			}
		case "required":
			if val.kind != kindArray {
				return c.fail(kp, "must be an array of property names")
			}
			for _, el := range val.arr {
				if el.kind != kindString {
					return c.fail(kp, "must be an array of property names")
				}
				n.required = append(n.required, el.str)
			}
		case "additionalProperties":
			if val.kind == kindBool && !val.b {
				n.closed = true
			} else {
				n.additional, err = c.compile(val, kp)
			}
		case "items":
			n.items, err = c.compile(val, kp)
		case "enum":
			if val.kind != kindArray {
				return c.fail(kp, "must be an array")
			}
			n.enum = make([]*datum, 0, len(val.arr))
			for _, el := range val.arr {
				n.enum = append(n.enum, datumOf(el))
			}
		case "const":
			n.constant = datumOf(val)
		case "anyOf":
			if val.kind != kindArray || len(val.arr) == 0 {
				return c.fail(kp, "must be a non-empty array of schemas")
			}
			for i, b := range val.arr {
				bn, err := c.compile(b, ptrIndex(kp, i))
				if err != nil {
					return err
				}
				n.anyOf = append(n.anyOf, bn)
			}
		case "$ref":
			name, ok := defName(val)
			if !ok || c.defs[name] == nil {
				return c.fail(kp, `must be a local "#/$defs/<name>" reference to a definition of the root`)
			}
			n.ref = c.def(name)
		case "$defs":
			if val.kind != kindObject {
				return c.fail(kp, "must be an object of schemas")
			}
			if p == "" {
				for _, dm := range val.obj {
					c.def(dm.key)
				}
			}
		case "pattern":
			if val.kind != kindString {
				return c.fail(kp, "must be a string")
			}
			if n.pattern, err = regexp.Compile(val.str); err != nil {
				return c.fail(kp, "not a valid regular expression: %v", err)
			}
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			d, err := c.number(val, kp)
			if err != nil {
				return err
			}
			n.bounds = append(n.bounds, bound{keyword: m.key, limit: d, text: string(val.num)})
		case "multipleOf":
			d, err := c.number(val, kp)
			if err != nil {
				return err
			}
			if d.sign() <= 0 {
				return c.fail(kp, "must be greater than 0")
			}
			n.multipleOf, n.multText = newDivisor(d), string(val.num)
		case "minItems", "maxItems":
			d, err := c.number(val, kp)
			if err != nil {
				return err
			}
			if d.neg || !d.isInteger() {
				return c.fail(kp, "must be a non-negative integer")
			}
			if m.key == "minItems" {
				n.minItems = &d
			} else {
				n.maxItems = &d
			}
		default:
			if !annotations[m.key] {
				return c.fail(kp, "keyword %q is not supported", m.key)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
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
	n, v, p := c.defs[name], c.defSrc[name], ptr("/$defs", name)
	if v.kind == kindBool {
		n.never = !v.b
		return nil
	}
	if v.kind != kindObject {
		return c.fail(p, "a schema must be a JSON object or a boolean")
	}
	return c.fill(n, v, p)
}

func (c *compiler) types(v *value, p string) ([]string, error) {
	var out []string
	switch v.kind {
	case kindString:
		out = []string{v.str}
	case kindArray:
		for _, el := range v.arr {
			if el.kind != kindString {
				return nil, c.fail(p, "must be a type name or an array of type names")
			}
			out = append(out, el.str)
		}
	default:
		return nil, c.fail(p, "must be a type name or an array of type names")
	}
	for _, t := range out {
		if !typeNames[t] {
			return nil, c.fail(p, "%q is not a JSON Schema type", t)
		}
	}
	return out, nil
}

func (c *compiler) number(v *value, p string) (decimal, error) {
	if v.kind != kindNumber {
		return decimal{}, c.fail(p, "must be a number")
	}
	d, ok := parseDecimal(string(v.num))
	if !ok {
		return decimal{}, c.fail(p, "the number is out of range")
	}
	return d, nil
}

// Problem is one reason a document does not match its schema.
type Problem struct {
	// Path is an RFC 6901 JSON pointer into the document; the root is "".
	Path string `json:"path"`
	// Keyword is the schema keyword the value fails ("type", "required", "pattern",
	// "maximum", ...). With Path it says what is wrong without the document's values.
	Keyword string `json:"keyword"`
	// Message says what is wrong; it may quote the document's values.
	Message string `json:"message"`
}

func (p Problem) String() string { return showPointer(p.Path) + ": " + p.Message }

// Brief says where the document fails which keyword, quoting none of its values: for
// diagnostics, which carry no provider text. A path holds only property names the schema
// defines and array indexes, except under a schema that allows other properties.
func (p Problem) Brief() string { return showPointer(p.Path) + ": fails " + strconv.Quote(p.Keyword) }

// ValidationError lists what is wrong with a document, each problem where it is.
type ValidationError struct {
	Problems []Problem
}

// maxShown bounds the message: it goes back to the model in a repair prompt.
const maxShown = 10

func (e *ValidationError) Error() string { return e.join(Problem.String) }

// Brief lists the problems as Problem.Brief does, without the document's values.
func (e *ValidationError) Brief() string { return e.join(Problem.Brief) }

func (e *ValidationError) join(show func(Problem) string) string {
	parts := make([]string, 0, min(len(e.Problems), maxShown)+1)
	for i, p := range e.Problems {
		if i == maxShown {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Problems)-maxShown))
			break
		}
		parts = append(parts, show(p))
	}
	return strings.Join(parts, "; ")
}

// Validate checks that doc is exactly one JSON document and that it matches the schema.
// A *ValidationError says what is wrong and where, in a form short enough for a repair
// prompt. A doc that is not one JSON document, or repeats a member name in an object,
// gets the errors of ParseAnswer. Data nested deeper than MaxDataDepth is invalid, as the
// CallResult builder could not deliver it.
func (v *Validator) Validate(doc []byte) error {
	d, refused, err := readDocument(doc)
	if err != nil {
		return err
	}
	if refused != nil {
		return &ValidationError{Problems: []Problem{*refused}}
	}
	e := &evaluator{}
	if e.check(v.root, d, "", false) {
		return nil
	}
	e.check(v.root, d, "", true)
	if len(e.out) == 0 { // every failing check says why; this keeps the verdict if one did not
		e.out = []Problem{{Path: "", Keyword: "schema", Message: "does not match the schema"}}
	}
	return &ValidationError{Problems: e.out}
}

// maxFrames bounds how deeply validation recurses: through the document (MaxDataDepth
// levels) and, at each level, through $ref and anyOf. A schema whose references nest
// beyond it fails the document rather than the stack.
const maxFrames = 16 * MaxDataDepth

// evaluator validates one document. check is the one walk: without report it stops at the
// first failure and remembers what it found for a $ref or an anyOf, which a document may
// meet by many paths; with report it collects every problem, where it is.
type evaluator struct {
	memo   map[memoKey]bool
	frames int
	out    []Problem
}

type memoKey struct {
	n *node
	d *datum
}

func (e *evaluator) add(path, keyword, format string, args ...any) {
	e.out = append(e.out, Problem{Path: path, Keyword: keyword, Message: fmt.Sprintf(format, args...)})
}

func (e *evaluator) check(n *node, d *datum, path string, report bool) bool {
	remember := !report && (n.ref != nil || n.anyOf != nil)
	if remember {
		if ok, seen := e.memo[memoKey{n, d}]; seen {
			return ok
		}
	}
	if e.frames >= maxFrames {
		if report {
			e.add(path, "$ref", "the schema's $ref and anyOf nest too deeply to validate this value")
		}
		return false
	}
	e.frames++
	ok := e.checkHere(n, d, path, report)
	e.frames--
	if remember {
		if e.memo == nil {
			e.memo = map[memoKey]bool{}
		}
		e.memo[memoKey{n, d}] = ok
	}
	return ok
}

func (e *evaluator) checkHere(n *node, d *datum, path string, report bool) bool {
	if n.never {
		if report {
			e.add(path, "false", "no value is allowed here")
		}
		return false
	}
	ok := true
	fail := func(keyword, format string, args ...any) bool {
		ok = false
		if report {
			e.add(path, keyword, format, args...)
		}
		return report // go on only to report every problem
	}
	if n.ref != nil && !e.check(n.ref, d, path, report) {
		if ok = false; !report {
			return false
		}
	}
	if n.types != nil && !typeAllows(n.types, d) {
		fail("type", "expected %s, got %s", orList(n.types), d.describe())
		return false
	}
	if n.enum != nil && !slices.ContainsFunc(n.enum, d.equal) {
		if !fail("enum", "must be one of %s", listValues(n.enum)) {
			return false
		}
	}
	if n.constant != nil && !n.constant.equal(d) {
		if !fail("const", "must be %s", n.constant.describe()) {
			return false
		}
	}
	switch d.kind {
	case kindNumber:
		for _, b := range n.bounds {
			if c := d.num.cmp(b.limit); !boundHolds(b.keyword, c) {
				if !fail(b.keyword, "%s %s", boundWords[b.keyword], b.text) {
					return false
				}
			}
		}
		if n.multipleOf != nil && !n.multipleOf.divides(d.num) {
			if !fail("multipleOf", "must be a multiple of %s", n.multText) {
				return false
			}
		}
	case kindString:
		if n.pattern != nil && !n.pattern.MatchString(d.text) {
			if !fail("pattern", "%s does not match the pattern %q", d.describe(), n.pattern.String()) {
				return false
			}
		}
	case kindArray:
		count, _ := parseDecimal(strconv.Itoa(len(d.arr)))
		if n.minItems != nil && count.cmp(*n.minItems) < 0 {
			if !fail("minItems", "must have at least %s, has %d", itemCount(*n.minItems), len(d.arr)) {
				return false
			}
		}
		if n.maxItems != nil && count.cmp(*n.maxItems) > 0 {
			if !fail("maxItems", "must have at most %s, has %d", itemCount(*n.maxItems), len(d.arr)) {
				return false
			}
		}
		if n.items != nil {
			for i, el := range d.arr {
				if !e.check(n.items, el, childPath(path, strconv.Itoa(i), report), report) {
					if ok = false; !report {
						return false
					}
				}
			}
		}
	case kindObject:
		if !e.object(n, d, path, report) {
			if ok = false; !report {
				return false
			}
		}
	}
	if n.anyOf != nil && !e.anyOf(n, d, path, report) {
		ok = false
	}
	return ok
}

func childPath(path, token string, report bool) string {
	if !report {
		return ""
	}
	return ptr(path, token)
}

var boundWords = map[string]string{
	"minimum": "must be at least", "maximum": "must be at most",
	"exclusiveMinimum": "must be greater than", "exclusiveMaximum": "must be less than",
}

// boundHolds reads c, the value compared with the limit.
func boundHolds(keyword string, c int) bool {
	switch keyword {
	case "minimum":
		return c >= 0
	case "maximum":
		return c <= 0
	case "exclusiveMinimum":
		return c > 0
	}
	return c < 0
}

func (e *evaluator) object(n *node, d *datum, path string, report bool) bool {
	ok := true
	for _, name := range n.required {
		if _, has := d.get(name); !has {
			if ok = false; !report {
				return false
			}
			e.add(path, "required", "missing required property %q", name)
		}
	}
	fields := d.obj
	if report { // problems come out in the order of the names
		fields = slices.Clone(fields)
		slices.SortFunc(fields, func(a, b field) int { return strings.Compare(a.name, b.name) })
	}
	for _, f := range fields {
		if _, defined := n.props[f.name]; defined {
			continue
		}
		switch {
		case n.closed:
			if ok = false; !report {
				return false
			}
			e.add(path, "additionalProperties", "unexpected property %q", f.name)
		case n.additional != nil:
			if !e.check(n.additional, f.val, childPath(path, f.name, report), report) {
				if ok = false; !report {
					return false
				}
			}
		}
	}
	for _, f := range fields {
		if sub, defined := n.props[f.name]; defined && !e.check(sub, f.val, childPath(path, f.name, report), report) {
			if ok = false; !report {
				return false
			}
		}
	}
	return ok
}

// anyOf reports a value no branch takes. When exactly one branch has the value's type
// (a nullable union, say), its problems are the useful ones.
func (e *evaluator) anyOf(n *node, d *datum, path string, report bool) bool {
	for _, b := range n.anyOf {
		if e.check(b, d, "", false) {
			return true
		}
	}
	if !report {
		return false
	}
	var fit []*node
	var union []string
	typed := true
	for _, b := range n.anyOf {
		want := follow(b).types
		if want == nil {
			typed = false
		}
		for _, t := range want {
			if !slices.Contains(union, t) {
				union = append(union, t)
			}
		}
		if want == nil || typeAllows(want, d) {
			fit = append(fit, b)
		}
	}
	switch {
	case len(fit) == 1:
		e.check(fit[0], d, path, true)
	case len(fit) == 0 && typed:
		e.add(path, "type", "expected %s, got %s", orList(union), d.describe())
	default:
		e.add(path, "anyOf", "matches none of the %d alternatives (anyOf)", len(n.anyOf))
	}
	return false
}

// follow goes through a schema that is only a $ref.
func follow(n *node) *node {
	for range 32 {
		if n.ref == nil || n.types != nil {
			return n
		}
		n = n.ref
	}
	return n
}

// typeAllows applies JSON Schema's type test: an integer is also a number.
func typeAllows(want []string, d *datum) bool {
	got := d.jsonType()
	return slices.Contains(want, got) || (got == "integer" && slices.Contains(want, "number"))
}

func listValues(vals []*datum) string {
	const shown = 10
	parts := make([]string, 0, min(len(vals), shown)+1)
	for i, v := range vals {
		if i == shown {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, v.describe())
	}
	return strings.Join(parts, ", ")
}

func itemCount(n decimal) string {
	switch {
	case n.coef == "1" && n.exp == 0:
		return "1 item"
	case n.isZero():
		return "0 items"
	case n.exp <= 20:
		return n.coef + strings.Repeat("0", int(n.exp)) + " items"
	}
	return fmt.Sprintf("%se%d items", n.coef, n.exp)
}

func orList(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

func formatNumber(f float64) string {
	if math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
