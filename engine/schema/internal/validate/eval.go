package validate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/crw-dev/crw/engine/schema/internal/answer"
	"github.com/crw-dev/crw/engine/schema/internal/decimal"
	"github.com/crw-dev/crw/engine/schema/internal/jsontree"
)

// Problem is one reason a document does not match its schema.
type Problem struct {
	// Path is an RFC 6901 JSON pointer into the document; the root is "".
	Path string `json:"path"`
	// Keyword is the schema keyword the value fails ("type", "required", "pattern",
	// "maximum", ...). With Path it says what is wrong without the document's values.
	Keyword string `json:"keyword"`
	// Message says what is wrong; it may quote the document's values.
	Message string `json:"message"`
	// Want says what is wrong in words that quote none of the document's values (the
	// schema's own terms and the value's JSON type), when the keyword has such words: Brief
	// says it.
	Want string `json:"-"`
}

// String reads like `/findings/0/line: expected integer, got "x"`.
func (p Problem) String() string { return jsontree.ShowPointer(p.Path) + ": " + p.Message }

// Brief says where the document fails which keyword, quoting none of its values: for
// diagnostics, which carry no provider text. A path holds only property names the schema
// defines and array indexes, except under a schema that allows other properties.
func (p Problem) Brief() string {
	if p.Want != "" {
		return jsontree.ShowPointer(p.Path) + ": " + p.Want
	}
	return jsontree.ShowPointer(p.Path) + ": fails " + strconv.Quote(p.Keyword)
}

// ValidationError lists what is wrong with a document, each problem where it is.
type ValidationError struct {
	Problems []Problem
}

// maxShown bounds the message: it goes back to the model in a repair prompt.
const maxShown = 10

// Error lists the problems, the first maxShown of them.
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
// gets the errors of answer.Find. Data nested deeper than answer.MaxDataDepth is invalid,
// as the CallResult builder could not deliver it.
func (v *Validator) Validate(doc []byte) error {
	var b builder
	if err := answer.Document(string(doc), answer.Reading{Build: &b}); err != nil {
		return err
	}
	return v.verdict(&b)
}

// Answer takes the document out of a model's answer as answer.Find does and validates
// it, reading it once: the document comes back compact (as json.Compact writes it), with
// whether it was extracted from prose. Its errors are those of Find, then of Validate.
func (v *Validator) Answer(text string) (doc json.RawMessage, extracted bool, err error) {
	var b builder
	found, extracted, _, err := answer.Find(text, answer.Reading{Build: &b, Compact: true})
	if err != nil {
		return nil, false, err
	}
	if err := v.verdict(&b); err != nil {
		return nil, false, err
	}
	return json.RawMessage(found), extracted, nil
}

// verdict validates the document b read.
func (v *Validator) verdict(b *builder) error {
	if b.refused != nil {
		return &ValidationError{Problems: []Problem{*b.refused}}
	}
	e := &evaluator{}
	if e.check(v.root, b.root, "", false) {
		return nil
	}
	e.check(v.root, b.root, "", true)
	if len(e.out) == 0 { // every failing check says why; this keeps the verdict if one did not
		e.out = []Problem{{Path: "", Keyword: "schema", Message: "does not match the schema"}}
	}
	return &ValidationError{Problems: e.out}
}

// maxFrames bounds how deeply validation recurses: through the document (MaxDataDepth
// levels) and, at each level, through $ref and anyOf. A schema whose references nest
// beyond it fails the document rather than the stack.
const maxFrames = 16 * answer.MaxDataDepth

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

// want gives the problem just added its account without the document's values
// (Problem.Want), when it was reported.
func (e *evaluator) want(report bool, s string) {
	if report && len(e.out) > 0 {
		e.out[len(e.out)-1].Want = s
	}
}

// typeWant is a type's failure without the value: "must be an integer, got a string".
func typeWant(types []string, d *datum) string {
	named := make([]string, len(types))
	for i, t := range types {
		named[i] = article(t)
	}
	return "must be " + orList(named) + ", got " + article(d.jsonType())
}

// article is a JSON type with its article: an integer, a string, null.
func article(t string) string {
	switch t {
	case "null":
		return t
	case "integer", "object", "array":
		return "an " + t
	}
	return "a " + t
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
		e.want(report, typeWant(n.types, d))
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
	case jsontree.KindNumber:
		for _, b := range n.bounds {
			if c := d.num.Cmp(b.limit); !boundHolds(b.keyword, c) {
				failed := fail(b.keyword, "%s %s", boundWords[b.keyword], b.text)
				e.want(report, boundWords[b.keyword]+" "+b.text)
				if !failed {
					return false
				}
			}
		}
		if n.multipleOf != nil && !n.multipleOf.Divides(d.num) {
			if !fail("multipleOf", "must be a multiple of %s", n.multText) {
				return false
			}
		}
	case jsontree.KindString:
		if n.pattern != nil && !n.pattern.MatchString(d.text) {
			if !fail("pattern", "%s does not match the pattern %q", d.describe(), n.pattern.String()) {
				return false
			}
		}
	case jsontree.KindArray:
		count, _ := decimal.Parse(strconv.Itoa(len(d.arr)))
		if n.minItems != nil && count.Cmp(*n.minItems) < 0 {
			if !fail("minItems", "must have at least %s, has %d", itemCount(*n.minItems), len(d.arr)) {
				return false
			}
		}
		if n.maxItems != nil && count.Cmp(*n.maxItems) > 0 {
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
	case jsontree.KindObject:
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
	return jsontree.Ptr(path, token)
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
		e.want(true, typeWant(union, d))
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

func itemCount(n decimal.Decimal) string {
	switch {
	case n.Coef == "1" && n.Exp == 0:
		return "1 item"
	case n.IsZero():
		return "0 items"
	case n.Exp <= 20:
		return n.Coef + strings.Repeat("0", int(n.Exp)) + " items"
	}
	return fmt.Sprintf("%se%d items", n.Coef, n.Exp)
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

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
