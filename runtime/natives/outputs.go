package natives

import (
	"bytes"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/dop251/goja"
)

// What one native step builds is bounded as what it walks is: "a".repeat(2 ** 26).replace(/a/g,
// "0123456789abcdef") made a string of 2^30 characters in one step, past the heap limit and the
// deadline, and "x".repeat(2 ** 28).split("") an array of 2^28 strings. A replace, replaceAll,
// concat, join or toLocaleString refuses a result over MaxStringLength characters, and a split,
// replaceAll or global match refuses more than MaxArrayLength pieces or matches, each with a
// RangeError before the result is built. Where the size cannot be known beforehand, the step is
// made to check as it goes: a replacement function runs script code between matches and is
// interruptible; its results are counted.

// replaceMethod replaces obj[name] with impl, which is given the original.
func (v *Guards) replaceMethod(obj *goja.Object, name string, impl func(fc goja.FunctionCall, orig goja.Callable) goja.Value) {
	orig, ok := goja.AssertFunction(obj.Get(name))
	if !ok {
		return
	}
	rt := v.rt
	length := obj.Get(name).ToObject(rt).Get("length")
	fn := rt.ToValue(func(fc goja.FunctionCall) goja.Value {
		defer v.noGoPanic(name)
		return impl(fc, orig)
	}).(*goja.Object)
	_ = fn.DefineDataProperty("name", rt.ToValue(name), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	_ = fn.DefineDataProperty("length", length, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	_ = obj.DefineDataProperty(name, fn, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// call calls f, throwing what it throws.
func call(f goja.Callable, this goja.Value, args ...goja.Value) goja.Value {
	out, err := f(this, args...)
	if err != nil {
		panic(err)
	}
	return out
}

func missing(val goja.Value) bool { return val == nil || goja.IsUndefined(val) || goja.IsNull(val) }

// method is GetMethod: o[sym], nil when undefined or null, a TypeError when not callable.
func (v *Guards) method(o *goja.Object, sym *goja.Symbol) goja.Callable {
	m := o.GetSymbol(sym)
	if missing(m) {
		return nil
	}
	f, ok := goja.AssertFunction(m)
	if !ok {
		panic(v.rt.NewTypeError("%s is not a method", m.String()))
	}
	return f
}

func length(s goja.Value) int64 { return int64(s.(goja.String).Length()) }

// toString is the specification's ToString, to a goja.String (goja's Value.ToString leaves a
// primitive as it is): an object's toString or valueOf runs, once; a Symbol is a TypeError.
func toString(rt *goja.Runtime, val goja.Value) goja.String {
	if val == nil {
		val = goja.Undefined()
	}
	if o, ok := val.(*goja.Object); ok {
		val = o.ToString()
	}
	if s, ok := val.(goja.String); ok {
		return s
	}
	if _, ok := val.(*goja.Symbol); ok {
		panic(rt.NewTypeError("Cannot convert a Symbol value to a string"))
	}
	return rt.ToValue(val.String()).(goja.String)
}

func (v *Guards) str(val goja.Value) goja.String { return toString(v.rt, val) }

// mul is a*b, saturated past MaxStringLength so that no bound overflows.
func mul(a, b int64) int64 {
	if a != 0 && b > (1<<40)/a {
		return 1 << 40
	}
	return a * b
}

func (v *Guards) guardOutputs() {
	rt := v.rt
	str := rt.Get("String").ToObject(rt).Get("prototype").ToObject(rt)
	v.replaceMethod(str, "replace", func(fc goja.FunctionCall, orig goja.Callable) goja.Value {
		return v.stringReplace(fc, orig, false)
	})
	v.replaceMethod(str, "replaceAll", func(fc goja.FunctionCall, orig goja.Callable) goja.Value {
		return v.stringReplace(fc, orig, true)
	})
	v.replaceMethod(str, "split", v.stringSplit)
	v.replaceMethod(str, "concat", func(fc goja.FunctionCall, orig goja.Callable) goja.Value {
		if missing(fc.This) {
			return call(orig, fc.This, fc.Arguments...)
		}
		s := v.str(fc.This)
		total := length(s)
		args := make([]goja.Value, len(fc.Arguments))
		for i, a := range fc.Arguments {
			args[i] = v.str(a)
			if total += length(args[i]); total > MaxStringLength {
				v.throwRange("String.prototype.concat: a string of more than %d characters", MaxStringLength)
			}
		}
		return call(orig, s, args...)
	})

	array := rt.Get("Array").ToObject(rt).Get("prototype").ToObject(rt)
	v.replaceMethod(array, "join", func(fc goja.FunctionCall, _ goja.Callable) goja.Value {
		return v.join(fc, "Array.prototype.join", false)
	})
	v.replaceMethod(array, "toLocaleString", func(fc goja.FunctionCall, _ goja.Callable) goja.Value {
		return v.join(fc, "Array.prototype.toLocaleString", true)
	})

	// A typed array's elements are numbers: its length bounds what join makes.
	if u8, ok := rt.Get("Uint8Array").(*goja.Object); ok && u8.Get("prototype") != nil {
		typed := u8.Get("prototype").ToObject(rt).Prototype()
		lengthOf, _ := goja.AssertFunction(v.getter(typed, "length"))
		for _, name := range []string{"join", "toLocaleString"} {
			what := "%TypedArray%.prototype." + name
			v.wrapMethod(typed, name, func(fc goja.FunctionCall) {
				if lengthOf == nil {
					return
				}
				n, err := lengthOf(fc.This)
				if err != nil {
					return // not a typed array: the original throws
				}
				sep := int64(1)
				if name == "join" && !goja.IsUndefined(fc.Argument(0)) {
					s := v.str(fc.Argument(0))
					fc.Arguments[0] = s
					sep = length(s)
				}
				if mul(n.ToInteger(), maxNumberLength+sep) > MaxStringLength {
					v.throwRange("%s: %d elements could make a string of more than %d characters", what, n.ToInteger(), MaxStringLength)
				}
			})
		}
	}
}

// maxNumberLength is the most characters a number's string has ("-1.7976931348623157e+308").
const maxNumberLength = 24

// getter is the getter of o's own accessor name, or nil.
func (v *Guards) getter(o *goja.Object, name string) goja.Value {
	d, err := v.gopd(goja.Undefined(), o, v.rt.ToValue(name))
	if err != nil {
		return nil
	}
	if desc, ok := d.(*goja.Object); ok {
		return desc.Get("get")
	}
	return nil
}

// stringReplace is String.prototype.replace or replaceAll. A search value with a
// Symbol.replace method is given to it, as in the original; otherwise everything is read here,
// once (the strings, the limit of replaceAll's matches, the replacement), and the original is
// given strings and, where the size could pass the bound, a replacement function that counts.
func (v *Guards) stringReplace(fc goja.FunctionCall, orig goja.Callable, all bool) goja.Value {
	rt := v.rt
	name := "String.prototype.replace"
	if all {
		name += "All"
	}
	if missing(fc.This) {
		return call(orig, fc.This, fc.Arguments...)
	}
	search, replace := fc.Argument(0), fc.Argument(1)
	if o, ok := search.(*goja.Object); ok {
		if all {
			if m := o.GetSymbol(goja.SymMatch); (!missing(m) && m.ToBoolean()) || (missing(m) && isRegExp(o)) {
				flags := o.Get("flags")
				if missing(flags) {
					panic(rt.NewTypeError("%s: the flags of a RegExp are undefined", name))
				}
				if !strings.Contains(v.str(flags).String(), "g") {
					panic(rt.NewTypeError("%s called with a non-global RegExp argument", name))
				}
			}
		}
		if m := v.method(o, goja.SymReplace); m != nil {
			return call(m, o, fc.This, replace)
		}
	}
	s := v.str(fc.This)
	searchStr := v.str(search)
	n, m := length(s), length(searchStr)
	// At most this many matches, and each may replace its characters with more.
	most := int64(1)
	if all {
		most = n + 1
		if m > 0 {
			most = n / m
		}
		if most > MaxArrayLength && m > 0 {
			most = int64(countIn(s, searchStr, MaxArrayLength))
		}
		if most > MaxArrayLength {
			v.throwRange("%s: more than %d matches", name, MaxArrayLength)
		}
	}
	if f, ok := goja.AssertFunction(replace); ok {
		replace = v.countingReplacer(f, s, name)
	} else {
		repl := v.str(replace)
		replace = repl
		if n+mul(most, max(0, expansion(repl, n)-m)) > MaxStringLength {
			replace = v.substituter(repl, s, name)
		}
	}
	return call(orig, s, searchStr, replace)
}

// expansion bounds what one match's replacement string may become: each $ may stand for up to
// the whole string.
func expansion(repl goja.Value, n int64) int64 {
	r := repl.String()
	return int64(len(r)) + mul(int64(strings.Count(r, "$")), n)
}

// countingReplacer calls f for each match, as the original would, and refuses once the result
// would pass MaxStringLength.
func (v *Guards) countingReplacer(f goja.Callable, s goja.Value, name string) goja.Value {
	total := length(s)
	return v.rt.ToValue(func(fc goja.FunctionCall) goja.Value {
		limit := v.matchLimit
		v.matchLimit = 0 // the function's own searches count for it, not for this replace
		start := time.Now()
		out, err := f(goja.Undefined(), fc.Arguments...)
		// The function's time is the script's, not the search's: a slow function must not make
		// a replace that changed nothing look like a search cut off.
		v.searchNested += time.Since(start)
		v.matchLimit = limit
		if err != nil {
			panic(err)
		}
		r := v.str(out)
		if total += max(0, length(r)-length(v.str(fc.Argument(0)))); total > MaxStringLength {
			v.throwRange("%s: a string of more than %d characters", name, MaxStringLength)
		}
		return r
	})
}

// substituter is a replacement function that makes what the replacement string repl makes of
// each match (the $ patterns as goja reads them), counting the result's size before it builds
// it. The arguments are those of a replacement function: the match, its captures, the position,
// the string and, when the pattern names groups, the groups.
func (v *Guards) substituter(repl goja.Value, s goja.Value, name string) goja.Value {
	total := length(s)
	r := repl.(goja.String)
	return v.rt.ToValue(func(fc goja.FunctionCall) goja.Value {
		args := fc.Arguments
		var groups *goja.Object
		if last := args[len(args)-1]; !last.SameAs(s) {
			if !goja.IsUndefined(last) {
				groups = last.ToObject(v.rt)
			}
			args = args[:len(args)-1]
		}
		sub := substitution{rt: v.rt, str: s.(goja.String), position: int(args[len(args)-2].ToInteger()), captures: args[:len(args)-2], groups: groups}
		var count builder
		count.counting = true
		sub.write(&count, r)
		if total += max(0, count.n-length(v.str(sub.captures[0]))); total > MaxStringLength {
			v.throwRange("%s: a string of more than %d characters", name, MaxStringLength)
		}
		var b builder
		sub.write(&b, r)
		return b.value(v.rt)
	})
}

// substitution is what goja's writeSubstitution makes of one match at position of str, given
// its captures (the match first) and its named groups.
type substitution struct {
	rt       *goja.Runtime
	str      goja.String
	position int
	captures []goja.Value
	groups   *goja.Object
}

func (sub *substitution) capture(i int) goja.String {
	if c := sub.captures[i]; !missing(c) {
		return toString(sub.rt, c)
	}
	return emptyString
}

func (sub *substitution) write(b *builder, repl goja.String) {
	l, rl := sub.str.Length(), repl.Length()
	matched := sub.capture(0)
	tailPos := sub.position + matched.Length()
	for i := 0; i < rl; i++ {
		c := repl.CharAt(i)
		if c != '$' || i == rl-1 {
			b.unit(c)
			continue
		}
		switch ch := repl.CharAt(i + 1); ch {
		case '$':
			b.unit('$')
		case '`':
			b.write(sub.str.Substring(0, min(max(sub.position, 0), l)))
		case '\'':
			if tailPos < l {
				b.write(sub.str.Substring(max(tailPos, 0), l))
			}
		case '&':
			b.write(matched)
		case '<':
			end := -1
			for j := i + 2; j < rl; j++ {
				if repl.CharAt(j) == '>' {
					end = j
					break
				}
			}
			if end >= 0 && sub.groups != nil {
				if g := sub.groups.Get(repl.Substring(i+2, end).String()); !missing(g) {
					b.write(toString(sub.rt, g))
				}
				i = end
				continue
			}
			b.unit('$')
			b.unit('<')
		default:
			index, j := 0, i+1
			for lim := min(j+2, rl); j < lim; j++ {
				d := repl.CharAt(j)
				if d < '0' || d > '9' {
					break
				}
				m := index*10 + int(d-'0')
				if m >= len(sub.captures) {
					break
				}
				index = m
			}
			if index > 0 {
				b.write(sub.capture(index))
				i = j - 1
				continue
			}
			b.unit('$')
			b.unit(ch)
		}
		i++
	}
}

var emptyString = goja.StringFromUTF16(nil)

// stringSplit is String.prototype.split: a separator with a Symbol.split method is given to it,
// as in the original; otherwise the string, the limit and the separator are read here, once,
// and a split into more than MaxArrayLength pieces is refused.
func (v *Guards) stringSplit(fc goja.FunctionCall, orig goja.Callable) goja.Value {
	if missing(fc.This) {
		return call(orig, fc.This, fc.Arguments...)
	}
	sep, limit := fc.Argument(0), fc.Argument(1)
	if o, ok := sep.(*goja.Object); ok {
		if m := v.method(o, goja.SymSplit); m != nil {
			return call(m, o, fc.This, limit)
		}
	}
	s := v.str(fc.This)
	lim := int64(1<<32 - 1)
	if !goja.IsUndefined(limit) {
		lim = toUint32(limit)
		limit = v.rt.ToValue(lim)
	}
	if goja.IsUndefined(sep) {
		return call(orig, s, sep, limit)
	}
	r := v.str(sep)
	pieces := int64(s.Length())
	if r.Length() > 0 {
		pieces = pieces/int64(r.Length()) + 1
	}
	if min(lim, pieces) > MaxArrayLength && r.Length() > 0 {
		pieces = int64(countIn(s, r, MaxArrayLength)) + 1
	}
	if min(lim, pieces) > MaxArrayLength {
		v.throwRange("String.prototype.split: more than %d pieces", MaxArrayLength)
	}
	return call(orig, s, r, limit)
}

// toUint32 is goja's ToUint32.
func toUint32(val goja.Value) int64 {
	f := val.ToFloat()
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return int64(uint32(int64(f)))
}

// countIn counts the occurrences of sep in s that split and replaceAll find (each search starts
// where the last match ended), up to a little past most. sep is not empty.
func countIn(s, sep goja.String, most int) int {
	if a, ok := asciiOf(s); ok {
		if b, ok := asciiOf(sep); ok {
			return strings.Count(a, b)
		}
	}
	h, n := packed(s), packed(sep)
	count, i := 0, 0
	for count <= most {
		j := bytes.Index(h[i:], n)
		if j < 0 {
			break
		}
		if j += i; j%2 == 1 { // not on a code unit's boundary
			i = j + 1
			continue
		}
		count++
		i = j + len(n)
	}
	return count
}

// asciiOf is s's characters when goja holds it as ASCII.
func asciiOf(s goja.String) (string, bool) {
	if rv := reflect.ValueOf(s); rv.Kind() == reflect.String {
		return rv.String(), true
	}
	return "", false
}

// packed is s's UTF-16 code units, two bytes each.
func packed(s goja.String) []byte {
	b := make([]byte, 2*s.Length())
	for i := range s.Length() {
		c := s.CharAt(i)
		b[2*i], b[2*i+1] = byte(c>>8), byte(c)
	}
	return b
}

// join is Array.prototype.join or toLocaleString, with the result's size counted as it is
// built. An array that holds itself joins to "" where it recurs, as in goja; arrays nested deeper
// than MaxStringifyDepth are refused (each level was a Go call, and a million levels overflowed
// the Go stack).
func (v *Guards) join(fc goja.FunctionCall, what string, locale bool) goja.Value {
	rt := v.rt
	o := fc.This.ToObject(rt)
	for _, j := range v.joining {
		if j.SameAs(o) {
			return rt.ToValue("")
		}
	}
	if len(v.joining) >= MaxStringifyDepth {
		v.throwRange("%s: arrays nested deeper than %d levels", what, MaxStringifyDepth)
	}
	v.joining = append(v.joining, o)
	defer func() { v.joining = v.joining[:len(v.joining)-1] }()
	count := max(orEmpty(o.Get("length")).ToInteger(), 0)
	if count > MaxArrayLength {
		v.throwRange("%s: a length of %d is more than crw lets a native walk (%d)", what, count, MaxArrayLength)
	}
	sep := goja.String(asciiComma)
	if !locale && !goja.IsUndefined(fc.Argument(0)) {
		sep = v.str(fc.Argument(0))
	}
	var b builder
	for i := range count {
		if i%stringifyCheckStep == 0 && v.stopping.Load() {
			v.throwRange("%s: the workflow is being stopped", what)
		}
		if i > 0 {
			b.write(sep)
		}
		if e := o.Get(strconv.FormatInt(i, 10)); !missing(e) {
			if locale {
				f, ok := goja.AssertFunction(e.ToObject(rt).Get("toLocaleString"))
				if !ok {
					panic(rt.NewTypeError("Property 'toLocaleString' of object %s is not a function", e.String()))
				}
				e = call(f, e)
			}
			b.write(v.str(e))
		}
		if b.n > MaxStringLength {
			v.throwRange("%s: a string of more than %d characters", what, MaxStringLength)
		}
	}
	return b.value(rt)
}

var asciiComma = func() goja.String { return goja.StringFromUTF16([]uint16{','}) }()

// builder builds a string of goja's UTF-16 strings, as bytes while they are ASCII, or only
// counts its length.
type builder struct {
	counting bool
	ascii    strings.Builder
	wide     []uint16 // once a part is not ASCII
	n        int64
}

func (b *builder) unit(c uint16) {
	b.n++
	if b.counting {
		return
	}
	if b.wide == nil && c < 0x80 {
		b.ascii.WriteByte(byte(c))
		return
	}
	b.widen(1)
	b.wide = append(b.wide, c)
}

// widen turns the builder to UTF-16 code units.
func (b *builder) widen(more int) {
	if b.wide != nil {
		return
	}
	b.wide = make([]uint16, 0, b.ascii.Len()+more)
	for _, c := range []byte(b.ascii.String()) {
		b.wide = append(b.wide, uint16(c))
	}
}

func (b *builder) write(s goja.String) {
	b.n += int64(s.Length())
	if b.counting {
		return
	}
	if b.wide == nil {
		if a, ok := asciiOf(s); ok {
			b.ascii.WriteString(a)
			return
		}
		b.widen(s.Length())
	}
	for i := range s.Length() {
		b.wide = append(b.wide, s.CharAt(i))
	}
}

func (b *builder) value(rt *goja.Runtime) goja.Value {
	if b.wide == nil {
		return rt.ToValue(b.ascii.String())
	}
	return goja.StringFromUTF16(b.wide)
}
