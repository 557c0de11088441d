package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// Validator validates documents against one schema, resolved once. It is safe for
// concurrent use.
type Validator struct {
	root     *jsonschema.Schema
	resolved *jsonschema.Resolved
}

// Compile resolves a schema for validation. It does not apply the strict rules: call
// CheckStrict for that.
func Compile(schema []byte) (*Validator, error) {
	if _, err := parseJSON(schema); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	root := new(jsonschema.Schema)
	if err := json.Unmarshal(schema, root); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	resolved, err := root.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return &Validator{root: root, resolved: resolved}, nil
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
// The verdict is jsonschema-go's; a *ValidationError then says what is wrong and where,
// in a form short enough for a repair prompt. A doc that is not one JSON document gets
// the errors of ParseAnswer.
func (v *Validator) Validate(doc []byte) error {
	inst, err := decodeDocument(doc)
	if err != nil {
		return err
	}
	verr := v.resolved.Validate(inst)
	if verr == nil {
		return nil
	}
	e := &explainer{root: v.root, patterns: map[string]*regexp.Regexp{}}
	probs := e.check(v.root, inst, "")
	if len(probs) == 0 {
		// A keyword the explainer does not read (the strict rules keep them out).
		probs = []Problem{{Path: "", Keyword: "schema", Message: libraryMessage(verr)}}
	}
	return &ValidationError{Problems: probs}
}

// libraryMessage shortens jsonschema-go's error, whose nested "validating <schema>:"
// prefixes name schema locations, not document ones.
func libraryMessage(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			break
		}
		_, after, ok := strings.Cut(rest, ": ")
		if !ok {
			break
		}
		msg = after
	}
	return truncate(msg, 300)
}

// explainer walks a document with the schema to find every problem and its path. It
// reads the keywords a strict schema may hold, plus a few common others.
type explainer struct {
	root     *jsonschema.Schema
	patterns map[string]*regexp.Regexp
	depth    int
}

func (e *explainer) check(s *jsonschema.Schema, inst any, path string) []Problem {
	if s == nil {
		return nil
	}
	// A $ref cycle that consumes no part of the document must not recurse forever.
	if e.depth > 256 {
		return nil
	}
	e.depth++
	defer func() { e.depth-- }()

	var out []Problem
	add := func(p, keyword, format string, args ...any) {
		out = append(out, Problem{Path: p, Keyword: keyword, Message: fmt.Sprintf(format, args...)})
	}
	if isFalseSchema(s) {
		add(path, "false", "no value is allowed here")
		return out
	}
	if s.Ref != "" {
		out = append(out, e.check(e.ref(s.Ref), inst, path)...)
	}
	if want := wantedTypes(s); want != nil && !typeAllows(want, inst) {
		add(path, "type", "expected %s, got %s", orList(want), describe(inst))
		return out
	}
	if s.Enum != nil && !slices.ContainsFunc(s.Enum, func(x any) bool { return jsonschema.Equal(x, inst) }) {
		add(path, "enum", "must be one of %s", listValues(s.Enum))
	}
	if s.Const != nil && !jsonschema.Equal(*s.Const, inst) {
		add(path, "const", "must be %s", describe(*s.Const))
	}
	switch x := inst.(type) {
	case float64:
		e.number(s, x, path, add)
	case string:
		e.string(s, x, path, add)
	case []any:
		if s.MinItems != nil && len(x) < *s.MinItems {
			add(path, "minItems", "must have at least %s, has %d", items(*s.MinItems), len(x))
		}
		if s.MaxItems != nil && len(x) > *s.MaxItems {
			add(path, "maxItems", "must have at most %s, has %d", items(*s.MaxItems), len(x))
		}
		if s.Items != nil {
			for i, el := range x {
				out = append(out, e.check(s.Items, el, ptrIndex(path, i))...)
			}
		}
	case map[string]any:
		out = append(out, e.object(s, x, path)...)
	}
	if len(s.AnyOf) > 0 {
		out = append(out, e.anyOf(s, inst, path)...)
	}
	return out
}

func (e *explainer) number(s *jsonschema.Schema, x float64, path string, add func(string, string, string, ...any)) {
	if s.Minimum != nil && x < *s.Minimum {
		add(path, "minimum", "must be at least %s", formatNumber(*s.Minimum))
	}
	if s.Maximum != nil && x > *s.Maximum {
		add(path, "maximum", "must be at most %s", formatNumber(*s.Maximum))
	}
	if s.ExclusiveMinimum != nil && x <= *s.ExclusiveMinimum {
		add(path, "exclusiveMinimum", "must be greater than %s", formatNumber(*s.ExclusiveMinimum))
	}
	if s.ExclusiveMaximum != nil && x >= *s.ExclusiveMaximum {
		add(path, "exclusiveMaximum", "must be less than %s", formatNumber(*s.ExclusiveMaximum))
	}
	// The same test as jsonschema-go's, so that the two agree.
	if s.MultipleOf != nil {
		if _, frac := math.Modf(x / *s.MultipleOf); frac != 0 {
			add(path, "multipleOf", "must be a multiple of %s", formatNumber(*s.MultipleOf))
		}
	}
}

func (e *explainer) string(s *jsonschema.Schema, x, path string, add func(string, string, string, ...any)) {
	n := utf8.RuneCountInString(x)
	if s.MinLength != nil && n < *s.MinLength {
		add(path, "minLength", "must be at least %d characters long", *s.MinLength)
	}
	if s.MaxLength != nil && n > *s.MaxLength {
		add(path, "maxLength", "must be at most %d characters long", *s.MaxLength)
	}
	if s.Pattern != "" {
		re, ok := e.patterns[s.Pattern]
		if !ok {
			re, _ = regexp.Compile(s.Pattern) // Resolve compiled it already
			e.patterns[s.Pattern] = re
		}
		if re != nil && !re.MatchString(x) {
			add(path, "pattern", "%s does not match the pattern %q", describe(x), s.Pattern)
		}
	}
}

func (e *explainer) object(s *jsonschema.Schema, obj map[string]any, path string) []Problem {
	var out []Problem
	for _, name := range s.Required {
		if _, ok := obj[name]; !ok {
			out = append(out, Problem{Path: path, Keyword: "required", Message: fmt.Sprintf("missing required property %q", name)})
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var extra []string
	for _, k := range keys {
		if _, ok := s.Properties[k]; !ok && len(s.PatternProperties) == 0 {
			extra = append(extra, k)
		}
	}
	if isFalseSchema(s.AdditionalProperties) {
		for _, k := range extra {
			out = append(out, Problem{Path: path, Keyword: "additionalProperties", Message: fmt.Sprintf("unexpected property %q", k)})
		}
	} else if s.AdditionalProperties != nil {
		for _, k := range extra {
			out = append(out, e.check(s.AdditionalProperties, obj[k], ptr(path, k))...)
		}
	}
	for _, k := range keys {
		if sub, ok := s.Properties[k]; ok {
			out = append(out, e.check(sub, obj[k], ptr(path, k))...)
		}
	}
	return out
}

// anyOf reports a value no branch takes. When exactly one branch has the value's type
// (a nullable union, say), its problems are the useful ones.
func (e *explainer) anyOf(s *jsonschema.Schema, inst any, path string) []Problem {
	probs := make([][]Problem, len(s.AnyOf))
	for i, b := range s.AnyOf {
		probs[i] = e.check(b, inst, path)
		if len(probs[i]) == 0 {
			return nil
		}
	}
	var fit []int
	var union []string
	typed := true
	for i, b := range s.AnyOf {
		want := wantedTypes(e.follow(b))
		if want == nil {
			typed = false
		}
		for _, t := range want {
			if !slices.Contains(union, t) {
				union = append(union, t)
			}
		}
		if want == nil || typeAllows(want, inst) {
			fit = append(fit, i)
		}
	}
	switch {
	case len(fit) == 1:
		return probs[fit[0]]
	case len(fit) == 0 && typed:
		return []Problem{{Path: path, Keyword: "type", Message: fmt.Sprintf("expected %s, got %s", orList(union), describe(inst))}}
	default:
		return []Problem{{Path: path, Keyword: "anyOf", Message: fmt.Sprintf("matches none of the %d alternatives (anyOf)", len(s.AnyOf))}}
	}
}

// follow goes through a schema that is only a $ref.
func (e *explainer) follow(s *jsonschema.Schema) *jsonschema.Schema {
	for range 32 {
		if s == nil || s.Ref == "" || s.Type != "" || s.Types != nil {
			return s
		}
		s = e.ref(s.Ref)
	}
	return s
}

// ref finds the target of a local reference: "#", "#/$defs/<name>" or "#/definitions/<name>".
func (e *explainer) ref(ref string) *jsonschema.Schema {
	if ref == "#" {
		return e.root
	}
	if name, ok := strings.CutPrefix(ref, "#/$defs/"); ok {
		return e.root.Defs[pointerUnescaper.Replace(name)]
	}
	if name, ok := strings.CutPrefix(ref, "#/definitions/"); ok {
		return e.root.Definitions[pointerUnescaper.Replace(name)]
	}
	return nil
}

// isFalseSchema recognizes how jsonschema-go reads the schema false: {"not": {}}.
func isFalseSchema(s *jsonschema.Schema) bool {
	return s != nil && s.Not != nil && reflect.ValueOf(*s.Not).IsZero()
}

func wantedTypes(s *jsonschema.Schema) []string {
	switch {
	case s == nil:
		return nil
	case s.Type != "":
		return []string{s.Type}
	default:
		return s.Types
	}
}

// typeAllows applies JSON Schema's type test: an integer is also a number.
func typeAllows(want []string, inst any) bool {
	got := jsonType(inst)
	return slices.Contains(want, got) || (got == "integer" && slices.Contains(want, "number"))
}

func jsonType(inst any) string {
	switch x := inst.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if _, frac := math.Modf(x); frac == 0 {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", inst)
}

// describe shows a value briefly: scalars as JSON, containers by kind.
func describe(inst any) string {
	switch v := inst.(type) {
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case string:
		return strconv.Quote(truncate(v, 40))
	}
	b, err := json.Marshal(inst)
	if err != nil {
		return fmt.Sprint(inst)
	}
	return string(b)
}

func listValues(vals []any) string {
	const shown = 10
	parts := make([]string, 0, min(len(vals), shown)+1)
	for i, v := range vals {
		if i == shown {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, describe(v))
	}
	return strings.Join(parts, ", ")
}

func items(n int) string {
	if n == 1 {
		return "1 item"
	}
	return strconv.Itoa(n) + " items"
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
