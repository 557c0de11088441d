// Package synth builds a deterministic instance of a schema, for answers nobody scripted
// (the offline backend, the simulator, the mock model).
package synth

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/crw-dev/crw/engine/schema/internal/decimal"
	"github.com/crw-dev/crw/engine/schema/internal/jsontree"
)

// synthSteps bounds the work on a schema whose branches and fallbacks multiply.
const synthSteps = 100000

// MaxSize bounds a synthesized instance, in bytes: minItems multiplied through nested
// arrays could otherwise ask for more memory than the host has.
const MaxSize = 1 << 20

// formatSamples are valid values of the formats a strict schema may name.
var formatSamples = map[string]string{
	"date-time":     "2000-01-01T00:00:00Z",
	"date":          "2000-01-01",
	"time":          "00:00:00Z",
	"duration":      "P1D",
	"email":         "user@example.com",
	"idn-email":     "user@example.com",
	"hostname":      "example.com",
	"idn-hostname":  "example.com",
	"ipv4":          "192.0.2.1",
	"ipv6":          "2001:db8::1",
	"uuid":          "00000000-0000-4000-8000-000000000000",
	"uri":           "https://example.com/",
	"uri-reference": "https://example.com/",
	"iri":           "https://example.com/",
	"iri-reference": "https://example.com/",
}

// stringCandidates are tried, in order, against a pattern the regexp walk could not meet.
var stringCandidates = []string{"", "a", "0", "A", "example", "a0", "x-1", "2000-01-01", "user@example.com", "https://example.com/"}

// Build builds a deterministic instance of a schema, for answers nobody scripted.
//
// It takes const, else the first enum value; follows $ref (a definition is not entered
// again while it is being built, so recursion ends where the schema allows: an empty
// array, a null, another anyOf branch); takes the first anyOf branch that can be built;
// of a type union, the first type other than null that can be built. Objects get every
// property in schema order, arrays max(minItems, 1) items bounded by maxItems, strings ""
// or a sample of their format or a string matching their pattern, numbers 0 or the
// closest value the bounds and multipleOf allow, booleans false.
//
// The work is bounded, and so is the instance (MaxSize). A schema it cannot satisfy
// (bounds no number it tries meets, a pattern none of its strings match, an instance too
// large) is an error that names the schema's pointer. What it builds is not validated
// here: the caller holds it to the schema.
func Build(root *jsontree.Value) ([]byte, error) {
	g := &synth{root: root, active: map[string]bool{}}
	return g.gen(root, "")
}

type synth struct {
	root   *jsontree.Value
	active map[string]bool
	steps  int
}

var errTooComplex = errors.New("the schema is too complex to synthesize an instance")

// synthError names the schema location no value could be built for.
type synthError struct {
	pointer string
	msg     string
}

func (e *synthError) Error() string { return jsontree.ShowPointer(e.pointer) + ": " + e.msg }

func fail(p, format string, args ...any) error {
	return &synthError{pointer: p, msg: fmt.Sprintf(format, args...)}
}

func (g *synth) gen(v *jsontree.Value, p string) ([]byte, error) {
	if g.steps++; g.steps > synthSteps {
		return nil, errTooComplex
	}
	switch v.Kind {
	case jsontree.KindBool:
		if v.Bool {
			return []byte("null"), nil
		}
		return nil, fail(p, "the schema false allows no value")
	case jsontree.KindObject:
	default:
		return nil, fail(p, "a schema must be a JSON object")
	}
	if c := v.Get("const"); c != nil {
		return jsontree.AppendJSON(nil, c), nil
	}
	if e := v.Get("enum"); e != nil && e.Kind == jsontree.KindArray && len(e.Arr) > 0 {
		return jsontree.AppendJSON(nil, e.Arr[0]), nil
	}
	if r := v.Get("$ref"); r != nil {
		return g.ref(r, p)
	}
	if alts := v.Get("anyOf"); alts != nil && alts.Kind == jsontree.KindArray && len(alts.Arr) > 0 {
		var first error
		for i, b := range alts.Arr {
			out, err := g.gen(b, jsontree.PtrIndex(p, "anyOf", i))
			if err == nil {
				return out, nil
			}
			if errors.Is(err, errTooComplex) {
				return nil, err
			}
			first = cmpErr(first, err)
		}
		return nil, first
	}
	types := typeOrder(v)
	var first error
	for _, t := range types {
		out, err := g.genType(t, v, p)
		if err == nil {
			return out, nil
		}
		if errors.Is(err, errTooComplex) {
			return nil, err
		}
		first = cmpErr(first, err)
	}
	if first == nil {
		return nil, fail(p, "no type to build")
	}
	return nil, first
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// typeOrder lists the types to try: the declared ones with null last, or the one the
// keywords imply, or null for a schema that allows anything.
func typeOrder(v *jsontree.Value) []string {
	t := v.Get("type")
	var types []string
	switch {
	case t != nil && t.Kind == jsontree.KindString:
		types = []string{t.Str}
	case t != nil && t.Kind == jsontree.KindArray:
		for _, el := range t.Arr {
			if el.Kind == jsontree.KindString && !slices.Contains(types, el.Str) {
				types = append(types, el.Str)
			}
		}
		// Null last: an answer with values shows more than one with nulls.
		slices.SortStableFunc(types, func(a, b string) int {
			return boolInt(a == "null") - boolInt(b == "null")
		})
	case v.Get("properties") != nil || v.Get("additionalProperties") != nil || v.Get("required") != nil:
		types = []string{"object"}
	case v.Get("items") != nil || v.Get("minItems") != nil || v.Get("maxItems") != nil:
		types = []string{"array"}
	case v.Get("pattern") != nil || v.Get("format") != nil:
		types = []string{"string"}
	case v.Get("minimum") != nil || v.Get("maximum") != nil || v.Get("exclusiveMinimum") != nil ||
		v.Get("exclusiveMaximum") != nil || v.Get("multipleOf") != nil:
		types = []string{"number"}
	default:
		types = []string{"null"}
	}
	return types
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (g *synth) ref(r *jsontree.Value, p string) ([]byte, error) {
	name, ok := jsontree.DefName(r)
	if r.Kind == jsontree.KindString && r.Str == "#" {
		name, ok = "#", true
	}
	if !ok {
		return nil, fail(jsontree.Ptr(p, "$ref"), "cannot follow $ref %s", jsontree.AppendJSON(nil, r))
	}
	target := g.root
	tp := ""
	if name != "#" {
		target = g.root.Get("$defs").Get(name)
		tp = jsontree.Ptr("", "$defs", name)
	}
	if target == nil {
		return nil, fail(jsontree.Ptr(p, "$ref"), "$ref %q does not resolve", r.Str)
	}
	if g.active[name] {
		return nil, fail(jsontree.Ptr(p, "$ref"), "recursion through %q has no end here", r.Str)
	}
	g.active[name] = true
	defer delete(g.active, name)
	return g.gen(target, tp)
}

func (g *synth) genType(t string, v *jsontree.Value, p string) ([]byte, error) {
	switch t {
	case "object":
		return g.object(v, p)
	case "array":
		return g.array(v, p)
	case "string":
		return genString(v, p)
	case "integer":
		return genNumber(v, p, true)
	case "number":
		return genNumber(v, p, false)
	case "boolean":
		return []byte("false"), nil
	case "null":
		return []byte("null"), nil
	}
	return nil, fail(jsontree.Ptr(p, "type"), "unknown type %q", t)
}

func (g *synth) object(v *jsontree.Value, p string) ([]byte, error) {
	required := map[string]bool{}
	if req := v.Get("required"); req != nil && req.Kind == jsontree.KindArray {
		for _, el := range req.Arr {
			if el.Kind == jsontree.KindString {
				required[el.Str] = true
			}
		}
	}
	buf := []byte{'{'}
	if props := v.Get("properties"); props != nil && props.Kind == jsontree.KindObject {
		last := map[string]int{} // with duplicate names the last definition counts
		for i, m := range props.Obj {
			last[m.Key] = i
		}
		for i, m := range props.Obj {
			if last[m.Key] != i {
				continue
			}
			out, err := g.gen(m.Val, jsontree.Ptr(p, "properties", m.Key))
			if err != nil {
				if required[m.Key] || errors.Is(err, errTooComplex) {
					return nil, err
				}
				continue // an optional property that cannot be built is left out
			}
			if len(buf) > 1 {
				buf = append(buf, ',')
			}
			buf = jsontree.AppendString(buf, m.Key)
			buf = append(buf, ':')
			buf = append(buf, out...)
			if len(buf) > MaxSize {
				return nil, fail(p, "the instance would be larger than %d bytes", MaxSize)
			}
		}
	}
	return append(buf, '}'), nil
}

func (g *synth) array(v *jsontree.Value, p string) ([]byte, error) {
	lo, _ := v.Get("minItems").Count()
	n := max(lo, 1)
	if hi, ok := v.Get("maxItems").Count(); ok && n > hi {
		n = hi
	}
	if n == 0 {
		return []byte("[]"), nil
	}
	item := []byte("null")
	if items := v.Get("items"); items != nil {
		out, err := g.gen(items, jsontree.Ptr(p, "items"))
		if err != nil {
			if lo == 0 && !errors.Is(err, errTooComplex) {
				return []byte("[]"), nil
			}
			return nil, err
		}
		item = out
	}
	if int64(n)*int64(len(item)+1) > MaxSize {
		return nil, fail(jsontree.Ptr(p, "minItems"), "%s of %d bytes each make an instance larger than %d bytes", items(n), len(item)+1, MaxSize)
	}
	buf := make([]byte, 0, n*(len(item)+1)+1)
	buf = append(buf, '[')
	for i := range n {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, item...)
	}
	return append(buf, ']'), nil
}

func genString(v *jsontree.Value, p string) ([]byte, error) {
	sample := placeholder(p)
	if f := v.Get("format"); f != nil && f.Kind == jsontree.KindString {
		sample = formatSamples[f.Str]
	}
	pat := v.Get("pattern")
	if pat == nil || pat.Kind != jsontree.KindString {
		return jsontree.AppendString(nil, sample), nil
	}
	re, err := regexp.Compile(pat.Str)
	if err != nil {
		return nil, fail(jsontree.Ptr(p, "pattern"), "invalid pattern: %v", err)
	}
	candidates := []string{sample}
	if s, ok := fromRegexp(pat.Str); ok {
		candidates = append(candidates, s)
	}
	candidates = append(candidates, stringCandidates...)
	for _, c := range candidates {
		if re.MatchString(c) {
			return jsontree.AppendString(nil, c), nil
		}
	}
	return nil, fail(jsontree.Ptr(p, "pattern"), "no sample string matches the pattern %q", pat.Str)
}

// placeholder names the property a string stands for ("<title>"), so a synthesized answer
// reads as what it is; a string that is no property's value is "<text>".
func placeholder(p string) string {
	segs := strings.Split(p, "/")
	for i := len(segs) - 1; i > 0; i-- {
		if segs[i-1] == "properties" {
			return "<" + strings.NewReplacer("~1", "/", "~0", "~").Replace(segs[i]) + ">"
		}
	}
	return "<text>"
}

// fromRegexp builds a short string the pattern matches, taking the first alternative,
// the fewest repetitions and a plain character of each class.
func fromRegexp(pattern string) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	ok := writeRegexp(&b, re.Simplify(), 0)
	return b.String(), ok && b.Len() <= 4096
}

func writeRegexp(b *strings.Builder, re *syntax.Regexp, depth int) bool {
	if depth > 100 || b.Len() > 4096 {
		return false
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return false
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
	case syntax.OpCharClass:
		r, ok := pickRune(re.Rune)
		if !ok {
			return false
		}
		b.WriteRune(r)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('a')
	case syntax.OpCapture:
		return writeRegexp(b, re.Sub[0], depth+1)
	case syntax.OpPlus:
		return writeRegexp(b, re.Sub[0], depth+1)
	case syntax.OpRepeat:
		for range re.Min {
			if !writeRegexp(b, re.Sub[0], depth+1) {
				return false
			}
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !writeRegexp(b, sub, depth+1) {
				return false
			}
		}
	case syntax.OpAlternate:
		return writeRegexp(b, re.Sub[0], depth+1)
	}
	// Star, Quest, empty matches and anchors add nothing.
	return true
}

// pickRune takes a readable rune of a class given as ranges: a letter or digit if there
// is one, else printable ASCII, else the class's first rune.
func pickRune(ranges []rune) (rune, bool) {
	if len(ranges) < 2 {
		return 0, false
	}
	for _, want := range [][2]rune{{'a', 'z'}, {'A', 'Z'}, {'0', '9'}, {'!', '~'}, {' ', ' '}} {
		for i := 0; i+1 < len(ranges); i += 2 {
			lo, hi := max(ranges[i], want[0]), min(ranges[i+1], want[1])
			if lo <= hi {
				return lo, true
			}
		}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r-ranges[i] < 1024; r++ {
			if unicode.IsPrint(r) {
				return r, true
			}
		}
	}
	return ranges[0], true
}

// genNumber prefers 0, then values at or just inside the bounds, and checks each the way
// the validator will.
func genNumber(v *jsontree.Value, p string, integer bool) ([]byte, error) {
	minimum, hasMin := v.Get("minimum").Float()
	maximum, hasMax := v.Get("maximum").Float()
	exMin, hasExMin := v.Get("exclusiveMinimum").Float()
	exMax, hasExMax := v.Get("exclusiveMaximum").Float()
	mult, hasMult := v.Get("multipleOf").Float()
	if hasMult && mult <= 0 {
		hasMult = false
	}
	if hasMult {
		if out, ok := exactMultiple(v, integer); ok {
			return out, nil
		}
	}
	ok := func(x float64) bool {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return false
		}
		if integer && x != math.Trunc(x) {
			return false
		}
		if hasMin && x < minimum || hasMax && x > maximum || hasExMin && x <= exMin || hasExMax && x >= exMax {
			return false
		}
		if hasMult {
			if _, frac := math.Modf(x / mult); frac != 0 {
				return false
			}
		}
		return true
	}

	lo, hasLo := math.Inf(-1), false
	if hasMin {
		lo, hasLo = minimum, true
	}
	if hasExMin && (!hasLo || exMin >= lo) {
		lo, hasLo = exMin, true
	}
	hi, hasHi := math.Inf(1), false
	if hasMax {
		hi, hasHi = maximum, true
	}
	if hasExMax && (!hasHi || exMax <= hi) {
		hi, hasHi = exMax, true
	}

	candidates := []float64{0}
	if hasLo {
		candidates = append(candidates, lo, math.Ceil(lo), math.Floor(lo)+1, lo+1, math.Nextafter(lo, math.Inf(1)))
	}
	if hasHi {
		candidates = append(candidates, hi, math.Floor(hi), math.Ceil(hi)-1, hi-1, math.Nextafter(hi, math.Inf(-1)))
	}
	if hasLo && hasHi {
		mid := lo + (hi-lo)/2
		candidates = append(candidates, mid, math.Floor(mid), math.Ceil(mid))
	}
	if hasMult {
		start := 0.0
		switch {
		case hasLo:
			start = math.Ceil(lo / mult)
		case hasHi:
			start = math.Floor(hi/mult) - 1000
		}
		// Far from 0 a float64 cannot count in steps of one: stop where k+1 == k.
		for i, prev := -1.0, math.NaN(); i <= 1000 && !math.IsInf(start, 0) && !math.IsNaN(start); i++ {
			k := start + i
			if k == prev {
				break
			}
			prev = k
			candidates = append(candidates, k*mult)
		}
	}
	for _, c := range candidates {
		if ok(c) {
			if c == 0 {
				c = 0 // not -0
			}
			out, err := json.Marshal(c)
			if err == nil {
				return out, nil
			}
		}
	}
	kind := "number"
	if integer {
		kind = "integer"
	}
	return nil, fail(p, "no %s meets the bounds and multipleOf", kind)
}

// exactMultiple computes the multiple of multipleOf nearest the schema's lower bound (else
// its upper bound, else 0) with exact rationals: far from 0, float64 cannot tell a multiple
// from its neighbours. ok is false when a number of the schema is too large to compute with
// or no multiple fits the bounds; the float search then tries.
func exactMultiple(v *jsontree.Value, integer bool) ([]byte, bool) {
	rat := func(key string) (*big.Rat, bool) {
		x := v.Get(key)
		if x == nil || x.Kind != jsontree.KindNumber || len(x.Num) > 40 {
			return nil, false
		}
		if d, ok := decimal.Parse(string(x.Num)); !ok || d.Exp > 400 || d.Exp < -400 {
			return nil, false
		}
		r, ok := new(big.Rat).SetString(string(x.Num))
		return r, ok
	}
	step, ok := rat("multipleOf")
	if !ok || step.Sign() <= 0 {
		return nil, false
	}
	if integer {
		// The smallest positive multiple that is an integer: p/q's multiples k*p/q are
		// integers when q divides k.
		step = new(big.Rat).SetInt(step.Num())
	}
	lo, hasLo := rat("minimum")
	exLo, hasExLo := rat("exclusiveMinimum")
	hi, hasHi := rat("maximum")
	exHi, hasExHi := rat("exclusiveMaximum")
	for _, k := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} {
		if v.Get(k) != nil {
			if _, ok := rat(k); !ok {
				return nil, false
			}
		}
	}
	fits := func(x *big.Rat) bool {
		return (!hasLo || x.Cmp(lo) >= 0) && (!hasExLo || x.Cmp(exLo) > 0) &&
			(!hasHi || x.Cmp(hi) <= 0) && (!hasExHi || x.Cmp(exHi) < 0)
	}
	// k*step for the integer k nearest to bound/step on the side that keeps it in bounds.
	multiple := func(bound *big.Rat, up bool) *big.Rat {
		q := new(big.Rat).Quo(bound, step)
		k := new(big.Int).Quo(q.Num(), q.Denom()) // truncated toward zero
		if up && q.Sign() > 0 && !q.IsInt() {
			k.Add(k, big.NewInt(1))
		}
		if !up && q.Sign() < 0 && !q.IsInt() {
			k.Sub(k, big.NewInt(1))
		}
		return new(big.Rat).Mul(new(big.Rat).SetInt(k), step)
	}
	var candidates []*big.Rat
	candidates = append(candidates, new(big.Rat))
	for _, b := range []struct {
		r  *big.Rat
		on bool
		up bool
	}{{lo, hasLo, true}, {exLo, hasExLo, true}, {hi, hasHi, false}, {exHi, hasExHi, false}} {
		if !b.on {
			continue
		}
		m := multiple(b.r, b.up)
		next := new(big.Rat).Add(m, step)
		if !b.up {
			next = new(big.Rat).Sub(m, step)
		}
		candidates = append(candidates, m, next)
	}
	for _, c := range candidates {
		if !fits(c) {
			continue
		}
		if c.IsInt() {
			// 1e300 rather than 301 digits: the validator reads either exactly.
			digits := c.Num().String()
			trimmed := strings.TrimRight(digits, "0")
			if zeros := len(digits) - len(trimmed); zeros >= 6 {
				return []byte(trimmed + "e" + strconv.Itoa(zeros)), true
			}
			return []byte(digits), true
		}
		// A multiple of a decimal is a decimal: its denominator divides a power of ten.
		return []byte(strings.TrimRight(c.FloatString(420), "0")), true
	}
	return nil, false
}

func items(n int) string {
	if n == 1 {
		return "1 item"
	}
	return strconv.Itoa(n) + " items"
}
