package natives

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"

	"github.com/crw-dev/crw/runtime/jsutil"
	"github.com/crw-dev/crw/runtime/limits"
	"github.com/crw-dev/crw/runtime/nesting"
)

// MaxRegExpNesting bounds how deeply the groups of a pattern compiled at run time may nest: the
// regexp2 engine goja falls back to for backreferences and lookarounds recurses once per group
// while it compiles, and new RegExp("(".repeat(1e6) + ")".repeat(1e6) + "\\1") overflowed the Go
// stack and ended the process. It is the bound of a regular-expression literal in a module.
const MaxRegExpNesting = nesting.Max

// errNotNative is a goja whose natives are not laid out as crw's guards expect.
var errNotNative = errors.New("vm: goja's native functions are not laid out as crw's guards expect")

// nativeFunc is where goja keeps the Go functions behind one of its native function objects.
// crw replaces them in place where replacing the object would change what a script sees: the
// RegExp constructor keeps its identity (RegExp(re) returns re, and goja's own fast paths compare
// with it), and RegExp.prototype.exec stays the property goja watches to keep its fast paths.
type nativeFunc struct {
	call      *func(goja.FunctionCall) goja.Value
	construct *func([]goja.Value, *goja.Object) *goja.Object
}

var (
	callType      = reflect.TypeOf((func(goja.FunctionCall) goja.Value)(nil))
	constructType = reflect.TypeOf((func([]goja.Value, *goja.Object) *goja.Object)(nil))
)

// nativeFuncOf finds the Go functions of a native function object.
func nativeFuncOf(o *goja.Object) (nativeFunc, error) {
	self := reflect.ValueOf(o).Elem().FieldByName("self")
	if !self.IsValid() || self.Kind() != reflect.Interface || self.IsNil() {
		return nativeFunc{}, errNotNative
	}
	impl := self.Elem()
	if impl.Kind() != reflect.Pointer || impl.Type().Elem().Name() != "nativeFuncObject" {
		return nativeFunc{}, errNotNative
	}
	f, c := impl.Elem().FieldByName("f"), impl.Elem().FieldByName("construct")
	if !f.IsValid() || f.Type() != callType || !c.IsValid() || c.Type() != constructType {
		return nativeFunc{}, errNotNative
	}
	return nativeFunc{
		call:      (*func(goja.FunctionCall) goja.Value)(f.Addr().UnsafePointer()),
		construct: (*func([]goja.Value, *goja.Object) *goja.Object)(c.Addr().UnsafePointer()),
	}, nil
}

// guardRegExpPatterns bounds the nesting of every pattern compiled at run time: the RegExp
// constructor (called or constructed, a subclass's super call included), RegExp.prototype.compile,
// and String.prototype.match, matchAll and search, which compile a string into a RegExp.
// Patterns of literals were bounded by the loader, and a RegExp made from another copies its
// source.
func (v *Guards) guardRegExpPatterns() error {
	rt := v.rt
	ctor := rt.Get("RegExp").ToObject(rt)
	v.regExp = ctor
	nf, err := nativeFuncOf(ctor)
	if err != nil {
		return err
	}
	call, construct := *nf.call, *nf.construct
	*nf.call = func(fc goja.FunctionCall) goja.Value {
		defer v.noGoPanic("RegExp")
		args, same := v.regExpArgs(fc.Arguments, true)
		if same {
			return args[0]
		}
		fc.Arguments = args
		return call(fc)
	}
	*nf.construct = func(args []goja.Value, newTarget *goja.Object) *goja.Object {
		defer v.noGoPanic("RegExp")
		args, _ = v.regExpArgs(args, false)
		return construct(args, newTarget)
	}
	v.newRegExp = construct

	proto := ctor.Get("prototype").ToObject(rt)
	v.wrapMethod(proto, "compile", func(fc goja.FunctionCall) {
		if len(fc.Arguments) == 0 {
			return
		}
		switch p := fc.Arguments[0].(type) {
		case *goja.Object:
			if !isRegExp(p) {
				s := v.str(p)
				v.checkPattern(s)
				fc.Arguments[0] = s
			}
		case goja.String:
			v.checkPattern(p)
		}
	})

	str := rt.Get("String").ToObject(rt).Get("prototype").ToObject(rt)
	for _, m := range []struct {
		name  string
		sym   *goja.Symbol
		flags string
	}{{"match", goja.SymMatch, ""}, {"matchAll", goja.SymMatchAll, "g"}, {"search", goja.SymSearch, ""}} {
		orig, _ := goja.AssertFunction(str.Get(m.name))
		length := str.Get(m.name).ToObject(rt).Get("length")
		fn := rt.ToValue(func(fc goja.FunctionCall) goja.Value {
			return v.stringMatcher(fc, orig, m.sym, m.flags)
		}).(*goja.Object)
		_ = fn.DefineDataProperty("name", rt.ToValue(m.name), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
		_ = fn.DefineDataProperty("length", length, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
		_ = str.DefineDataProperty(m.name, fn, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	return nil
}

// isRegExp tells a RegExp object (one goja compiled, whatever its prototype) from anything else.
func isRegExp(o *goja.Object) bool {
	return o.ClassName() == "RegExp" && !jsutil.IsProxy(o)
}

// regExpArgs turns the pattern a RegExp is made from into the string goja will compile, and
// bounds it. An object other than a RegExp is read here once, as goja reads it (its source and
// flags when its Symbol.match says it is a regular expression, its string otherwise), and goja is
// given the strings: a getter that answered differently the second time cannot slip a deeper
// pattern past the check. same is a call of RegExp on a regular-expression object whose
// constructor is RegExp, which returns that object.
func (v *Guards) regExpArgs(args []goja.Value, called bool) (out []goja.Value, same bool) {
	if len(args) == 0 {
		return args, false
	}
	flags := goja.Undefined()
	if len(args) > 1 {
		flags = args[1]
	}
	switch p := args[0].(type) {
	case goja.String:
		v.checkPattern(p)
	case *goja.Object:
		if isRegExp(p) {
			return args, false
		}
		out = append([]goja.Value{nil, flags}, args[min(len(args), 2):]...)
		if m := p.GetSymbol(goja.SymMatch); m != nil && !goja.IsUndefined(m) && m.ToBoolean() {
			if called && goja.IsUndefined(flags) && p.Get("constructor").SameAs(v.regExp) {
				return []goja.Value{p}, true
			}
			out[0] = v.str(p.Get("source"))
			if goja.IsUndefined(flags) {
				out[1] = v.str(p.Get("flags"))
			}
		} else {
			out[0] = v.str(p)
		}
		v.checkPattern(out[0])
		return out, false
	}
	return args, false
}

func orEmpty(val goja.Value) goja.Value {
	if val == nil {
		return goja.Undefined()
	}
	return val
}

// checkPattern refuses a pattern whose groups nest deeper than MaxRegExpNesting.
func (v *Guards) checkPattern(p goja.Value) {
	if d := patternNesting(p.String()); d > MaxRegExpNesting {
		v.throwRange("RegExp: the pattern's groups nest more than %d deep", MaxRegExpNesting)
	}
}

// patternNesting is the deepest nesting of a pattern's groups: an unescaped "(" outside a
// character class opens one. A class ends at its first unescaped "]", as in JavaScript; regexp2,
// which reads a "]" first in a class as a character, never ends one sooner, so it never sees a
// group this count missed.
func patternNesting(p string) int {
	depth, deepest, inClass := 0, 0, false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\':
			i++
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
		case c == '(':
			depth++
			deepest = max(deepest, depth)
		case c == ')':
			depth = max(depth-1, 0)
		}
	}
	return deepest
}

// stringMatcher is String.prototype.match, matchAll or search, with the pattern a string
// becomes bounded. A string is checked and passed on; an object other than a RegExp is looked at
// here, once, as the original would (its matcher method is called, or it becomes a RegExp
// through the guarded constructor), so the original is only ever given a RegExp.
func (v *Guards) stringMatcher(fc goja.FunctionCall, orig goja.Callable, sym *goja.Symbol, flags string) goja.Value {
	rt := v.rt
	call := func(args ...goja.Value) goja.Value {
		out, err := orig(fc.This, args...)
		if err != nil {
			panic(err)
		}
		return out
	}
	this := fc.This
	if this == nil || goja.IsUndefined(this) || goja.IsNull(this) {
		return call(fc.Arguments...) // the original's TypeError
	}
	switch p := fc.Argument(0).(type) {
	case goja.String:
		v.checkPattern(p)
	case *goja.Object:
		if isRegExp(p) {
			break
		}
		if flags != "" {
			if m := p.GetSymbol(goja.SymMatch); m != nil && !goja.IsUndefined(m) && m.ToBoolean() {
				f := p.Get("flags")
				if f == nil || goja.IsUndefined(f) || goja.IsNull(f) {
					panic(rt.NewTypeError("String.prototype.matchAll: the flags of a RegExp are undefined"))
				}
				if !strings.ContainsRune(v.str(f).String(), 'g') {
					panic(rt.NewTypeError("RegExp doesn't have global flag set"))
				}
			}
		}
		if m := p.GetSymbol(sym); m != nil && !goja.IsUndefined(m) && !goja.IsNull(m) {
			matcher, ok := goja.AssertFunction(m)
			if !ok {
				panic(rt.NewTypeError("%s is not a function", sym.String()))
			}
			out, err := matcher(p, this)
			if err != nil {
				panic(err)
			}
			return out
		}
		args := []goja.Value{p}
		if flags != "" {
			args = append(args, rt.ToValue(flags))
		}
		args, _ = v.regExpArgs(args, false)
		return call(v.newRegExp(args, nil))
	}
	return call(fc.Arguments...)
}

// RegExpSearchTime is how long one regexp2 search may run. goja checks for an interrupt only
// between instructions, and a search is one native step: /(a+)+\1$/ on 34 characters
// backtracks for minutes, through a cancel, a signal, the deadline and the heap limit. regexp2
// can only end a search by its own match timeout, which crw sets for every pattern the process
// compiles; a search has no way to resume, so this is also the longest a search may take.
const RegExpSearchTime = time.Second

// searchCutoff is how long an operation that found nothing must have run for crw to take it
// for one whose search was cut off. goja turns regexp2's timeout into "no match", and crw cannot
// see the timeout itself: it sees the time. regexp2 reads a clock that a goroutine of its own
// advances every 100 ms, so a search it cuts off has run at least RegExpSearchTime less that
// clock's staleness; half of RegExpSearchTime leaves that staleness 500 ms.
const searchCutoff = RegExpSearchTime / 2

func init() {
	// The process's only regexp2 patterns are goja's, all compiled after this.
	regexp2.DefaultMatchTimeout = RegExpSearchTime
}

// guardRegExpSearches makes every native that searches with a RegExp tell a search cut off at
// RegExpSearchTime from one that found nothing: exec and test, the Symbol.match, replace,
// search and split methods (which String.prototype's methods call), and the next method of the
// iterator matchAll returns. Each is replaced inside its function object, as the constructor is:
// a new RegExp.prototype.exec would switch off goja's fast paths for every RegExp (an ordinary
// global replace ran eight times slower).
func (v *Guards) guardRegExpSearches() error {
	rt := v.rt
	proto := v.regExp.Get("prototype").ToObject(rt)
	v.regExpProto = proto
	v.execFn = proto.Get("exec")
	v.builtinExec, _ = goja.AssertFunction(v.execFn)
	v.sourceOf, _ = goja.AssertFunction(v.getter(proto, "source"))
	v.globalOf, _ = goja.AssertFunction(v.getter(proto, "global"))
	if d, err := v.gopd(goja.Undefined(), v.regExp, goja.SymSpecies); err == nil {
		if desc, ok := d.(*goja.Object); ok {
			v.species = desc.Get("get")
		}
	}
	if v.builtinExec == nil || v.sourceOf == nil || v.globalOf == nil || missing(v.species) {
		return errNotNative
	}
	// The string searched is made a string here, once (ToString of a string is then pure).
	stringArg := func(fc *goja.FunctionCall) {
		if _, ok := fc.This.(*goja.Object); ok {
			fc.Arguments = append([]goja.Value{v.str(fc.Argument(0))}, fc.Arguments[min(len(fc.Arguments), 1):]...)
		}
	}
	simple := func(prep func(*goja.FunctionCall)) func(goja.FunctionCall, func(goja.FunctionCall) goja.Value) goja.Value {
		return func(fc goja.FunctionCall, search func(goja.FunctionCall) goja.Value) goja.Value {
			prep(&fc)
			return search(fc)
		}
	}
	isNull := func(_ goja.FunctionCall, out goja.Value) bool { return goja.IsNull(out) }
	searches := []struct {
		fn      goja.Value
		name    string
		run     func(fc goja.FunctionCall, search func(goja.FunctionCall) goja.Value) goja.Value
		noMatch func(fc goja.FunctionCall, out goja.Value) bool
	}{
		{v.execFn, "RegExp.prototype.exec", simple(stringArg), isNull},
		{proto.Get("test"), "RegExp.prototype.test", simple(stringArg), func(_ goja.FunctionCall, out goja.Value) bool { return !out.ToBoolean() }},
		{proto.GetSymbol(goja.SymMatch), "RegExp.prototype[Symbol.match]", func(fc goja.FunctionCall, search func(goja.FunctionCall) goja.Value) goja.Value {
			stringArg(&fc)
			return v.matchByMatch(fc, search)
		}, isNull},
		{proto.GetSymbol(goja.SymSearch), "RegExp.prototype[Symbol.search]", simple(stringArg), func(_ goja.FunctionCall, out goja.Value) bool { return out.ToInteger() < 0 }},
		{proto.GetSymbol(goja.SymSplit), "RegExp.prototype[Symbol.split]", func(fc goja.FunctionCall, search func(goja.FunctionCall) goja.Value) goja.Value {
			stringArg(&fc)
			return v.regExpSplit(fc, search)
		}, func(_ goja.FunctionCall, out goja.Value) bool {
			o, ok := out.(*goja.Object)
			return ok && o.Get("length").ToInteger() <= 1
		}},
		{proto.GetSymbol(goja.SymReplace), "RegExp.prototype[Symbol.replace]", func(fc goja.FunctionCall, search func(goja.FunctionCall) goja.Value) goja.Value {
			stringArg(&fc)
			return v.regExpReplace(fc, search)
		}, func(fc goja.FunctionCall, out goja.Value) bool { return out.SameAs(fc.Argument(0)) }},
		{v.regExpIteratorNext(proto), "%RegExpStringIteratorPrototype%.next", simple(func(*goja.FunctionCall) {}), func(_ goja.FunctionCall, out goja.Value) bool {
			o, ok := out.(*goja.Object)
			return ok && o.Get("done").ToBoolean()
		}},
	}
	for _, s := range searches {
		o, ok := s.fn.(*goja.Object)
		if !ok {
			return errNotNative
		}
		nf, err := nativeFuncOf(o)
		if err != nil {
			return err
		}
		orig, s := *nf.call, s
		search := func(fc goja.FunctionCall) goja.Value {
			out, own := v.timeSearch(s.name, func() goja.Value { return orig(fc) })
			if own >= searchCutoff && s.noMatch(fc, out) {
				v.searchCutOff(s.name)
			}
			if v.stopping.Load() {
				v.throwRange("%s: the workflow is being stopped", s.name)
			}
			if v.matchLimit > 0 && s.name == "RegExp.prototype.exec" && !goja.IsNull(out) {
				if v.matchCount++; v.matchCount > v.matchLimit {
					v.throwRange("%s: more than %d matches", v.matchOp, v.matchLimit)
				}
			}
			return out
		}
		*nf.call = func(fc goja.FunctionCall) goja.Value {
			defer v.noGoPanic(s.name)
			return s.run(fc, search)
		}
	}
	return nil
}

// A global match, replace or split by a RegExp makes every match in one step: goja collects
// them all (the indexes of each match and of its captures) before it builds the result, and
// "x".repeat(2 ** 27).match(/(?:)/g) would make 2^27 of them. A string can hold one match more
// than it has characters, so such a search of a string longer than MaxArrayLength / (1 + the
// pattern's captures) is refused. A RegExp goja does not take for plain is searched through exec,
// match by match: those matches are counted instead.

// withMatchLimit runs f counting the matches exec makes for it (op names the method).
func (v *Guards) withMatchLimit(op string, f func() goja.Value) goja.Value {
	limit, count, name := v.matchLimit, v.matchCount, v.matchOp
	v.matchLimit, v.matchCount, v.matchOp = MaxArrayLength, 0, op
	defer func() { v.matchLimit, v.matchCount, v.matchOp = limit, count, name }()
	return f()
}

// plainRegExp reports whether goja searches rx in one step without calling exec: a RegExp of
// RegExp.prototype, whose only own property is lastIndex, and whose exec is goja's.
func (v *Guards) plainRegExp(rx *goja.Object) bool {
	if !isRegExp(rx) || !rx.Prototype().SameAs(v.regExpProto) || len(rx.Symbols()) > 0 {
		return false
	}
	if names := rx.GetOwnPropertyNames(); len(names) != 1 || names[0] != "lastIndex" {
		return false
	}
	d, err := v.gopd(goja.Undefined(), v.regExpProto, v.rt.ToValue("exec"))
	desc, ok := d.(*goja.Object)
	return err == nil && ok && desc.Get("value").SameAs(v.execFn)
}

// manyMatches reports whether a search of s by the RegExp rx could collect more than
// MaxArrayLength matches and captures in one step.
func (v *Guards) manyMatches(rx *goja.Object, s goja.Value) bool {
	src, err := v.sourceOf(rx)
	if err != nil {
		return true
	}
	return mul(length(s)+1, int64(1+captureGroups(src.String()))) > MaxArrayLength
}

// matchByMatch is RegExp.prototype[Symbol.match] with a global match's matches bounded.
func (v *Guards) matchByMatch(fc goja.FunctionCall, search func(goja.FunctionCall) goja.Value) goja.Value {
	const name = "RegExp.prototype[Symbol.match]"
	if rx, ok := fc.This.(*goja.Object); ok && len(fc.Arguments) > 0 {
		v.checkMatches(name, rx, fc.Arguments[0])
	}
	return v.withMatchLimit(name, func() goja.Value { return search(fc) })
}

// checkMatches refuses a global search of s by a plain RegExp that could collect more than
// MaxArrayLength matches and captures.
func (v *Guards) checkMatches(name string, rx *goja.Object, s goja.Value) {
	if v.plainRegExp(rx) && v.global(rx) && v.manyMatches(rx, s) {
		v.throwRange("%s: a global search of a string of %d characters could make more than %d matches", name, length(s), MaxArrayLength)
	}
}

func (v *Guards) global(rx *goja.Object) bool {
	g, err := v.globalOf(rx)
	return err == nil && g.ToBoolean()
}

// regExpReplace is RegExp.prototype[Symbol.replace] with its result bounded: a replacement
// function's results are counted; a replacement string is expanded by crw, counting, wherever
// goja's expansion could pass the bound (or where the matches may not be goja's own: a RegExp
// that is not plain may be given any match by an exec of the script's).
func (v *Guards) regExpReplace(fc goja.FunctionCall, search func(goja.FunctionCall) goja.Value) goja.Value {
	const name = "RegExp.prototype[Symbol.replace]"
	rx, ok := fc.This.(*goja.Object)
	if !ok || len(fc.Arguments) == 0 {
		return search(fc)
	}
	fc.Arguments = append(fc.Arguments[:1:1], fc.Argument(1))
	s := fc.Arguments[0]
	if f, ok := goja.AssertFunction(fc.Arguments[1]); ok {
		fc.Arguments[1] = v.countingReplacer(f, s, name)
	} else {
		repl := v.str(fc.Arguments[1])
		fc.Arguments[1] = repl
		n := length(s)
		if !v.plainRegExp(rx) || n+mul(n+1, expansion(repl, n)) > MaxStringLength {
			fc.Arguments[1] = v.substituter(repl, s, name)
		}
	}
	v.checkMatches(name, rx, s)
	return v.withMatchLimit(name, func() goja.Value { return search(fc) })
}

// regExpSplit is RegExp.prototype[Symbol.split]. goja splits a plain RegExp with the default
// species in one step, collecting every match of the whole string whatever the limit; crw lets it
// where the matches and pieces that step could make are within MaxArrayLength. Any other RegExp
// (one whose species is the script's could hand goja a splitter of any pattern) is split as the
// specification does, one exec at a time, counting the pieces; a string longer than
// MaxArrayLength is refused either way.
func (v *Guards) regExpSplit(fc goja.FunctionCall, search func(goja.FunctionCall) goja.Value) goja.Value {
	const name = "RegExp.prototype[Symbol.split]"
	rx, ok := fc.This.(*goja.Object)
	if !ok {
		return search(fc)
	}
	s := fc.Argument(0)
	if length(s) >= MaxArrayLength || v.plainRegExp(rx) && v.manyMatches(rx, s) {
		v.throwRange("%s: a string of %d characters could split into more than %d pieces", name, length(s), MaxArrayLength)
	}
	if v.plainRegExp(rx) && v.defaultSpecies() {
		return search(fc)
	}
	return v.splitByExec(rx, s.(goja.String), fc.Argument(1))
}

// defaultSpecies reports whether a plain RegExp's species constructor is RegExp, found without
// running script code: RegExp.prototype.constructor is RegExp, and RegExp[Symbol.species] is
// goja's getter.
func (v *Guards) defaultSpecies() bool {
	d, err := v.gopd(goja.Undefined(), v.regExpProto, v.rt.ToValue("constructor"))
	desc, ok := d.(*goja.Object)
	if err != nil || !ok || !desc.Get("value").SameAs(v.regExp) {
		return false
	}
	d, err = v.gopd(goja.Undefined(), v.regExp, goja.SymSpecies)
	desc, ok = d.(*goja.Object)
	return err == nil && ok && desc.Get("get").SameAs(v.species)
}

// splitByExec is the specification's RegExp.prototype[Symbol.split] (22.2.6.14).
func (v *Guards) splitByExec(rx *goja.Object, s goja.String, limit goja.Value) goja.Value {
	const name = "RegExp.prototype[Symbol.split]"
	rt := v.rt
	c := v.regExp
	if ctor := rx.Get("constructor"); ctor != nil && !goja.IsUndefined(ctor) {
		co, ok := ctor.(*goja.Object)
		if !ok {
			panic(rt.NewTypeError("%s: the constructor is not an object", name))
		}
		if sp := co.GetSymbol(goja.SymSpecies); !missing(sp) {
			if _, ok := goja.AssertConstructor(sp); !ok {
				panic(rt.NewTypeError("%s: the species is not a constructor", name))
			}
			c = sp.(*goja.Object)
		}
	}
	flags := v.str(rx.Get("flags")).String()
	unicode := strings.ContainsAny(flags, "uv")
	if !strings.Contains(flags, "y") {
		flags += "y"
	}
	construct, _ := goja.AssertConstructor(c)
	splitter, err := construct(nil, rx, rt.ToValue(flags))
	if err != nil {
		panic(err)
	}
	lim := int64(1<<32 - 1)
	if !goja.IsUndefined(limit) {
		lim = toUint32(limit)
	}
	var pieces []any
	add := func(p goja.Value) bool {
		if pieces = append(pieces, p); len(pieces) > MaxArrayLength {
			v.throwRange("%s: more than %d pieces", name, MaxArrayLength)
		}
		return int64(len(pieces)) == lim
	}
	if lim == 0 {
		return rt.NewArray()
	}
	size := int64(s.Length())
	if size == 0 {
		if goja.IsNull(v.regExpExec(splitter, s)) {
			pieces = append(pieces, s)
		}
		return rt.NewArray(pieces...)
	}
	p, q := int64(0), int64(0)
	for q < size {
		if q%stringifyCheckStep == 0 && v.stopping.Load() {
			v.throwRange("%s: the workflow is being stopped", name)
		}
		if err := splitter.Set("lastIndex", q); err != nil {
			panic(err)
		}
		z := v.regExpExec(splitter, s)
		if goja.IsNull(z) {
			q = advance(s, q, unicode)
			continue
		}
		e := min(max(orEmpty(splitter.Get("lastIndex")).ToInteger(), 0), size)
		if e == p {
			q = advance(s, q, unicode)
			continue
		}
		if add(s.Substring(int(p), int(q))) {
			return rt.NewArray(pieces...)
		}
		p = e
		zo := z.(*goja.Object)
		captures := max(orEmpty(zo.Get("length")).ToInteger()-1, 0)
		for i := int64(1); i <= captures; i++ {
			if add(orEmpty(zo.Get(strconv.FormatInt(i, 10)))) {
				return rt.NewArray(pieces...)
			}
		}
		q = p
	}
	add(s.Substring(int(p), int(size)))
	return rt.NewArray(pieces...)
}

// regExpExec is the specification's RegExpExec: the object's exec, or goja's.
func (v *Guards) regExpExec(r *goja.Object, s goja.Value) goja.Value {
	if f, ok := goja.AssertFunction(r.Get("exec")); ok {
		out := call(f, r, s)
		if _, ok := out.(*goja.Object); !ok && !goja.IsNull(out) {
			panic(v.rt.NewTypeError("exec returned something other than an object or null"))
		}
		return out
	}
	if !isRegExp(r) {
		panic(v.rt.NewTypeError("exec is not a function"))
	}
	return call(v.builtinExec, r, s)
}

// advance is the specification's AdvanceStringIndex.
func advance(s goja.String, i int64, unicode bool) int64 {
	if !unicode || i+1 >= int64(s.Length()) {
		return i + 1
	}
	if c, d := s.CharAt(int(i)), s.CharAt(int(i)+1); c >= 0xd800 && c < 0xdc00 && d >= 0xdc00 && d < 0xe000 {
		return i + 2
	}
	return i + 1
}

// captureGroups counts the capturing groups of a pattern: an unescaped "(" outside a class that
// is not "(?" unless it is "(?<name>".
func captureGroups(p string) int {
	n, inClass := 0, false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\':
			i++
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
		case c == '(':
			if rest := p[i+1:]; !strings.HasPrefix(rest, "?") ||
				strings.HasPrefix(rest, "?<") && !strings.HasPrefix(rest, "?<=") && !strings.HasPrefix(rest, "?<!") {
				n++
			}
		}
	}
	return n
}

// regExpIteratorNext is the next method of the iterators String.prototype.matchAll returns.
func (v *Guards) regExpIteratorNext(proto *goja.Object) goja.Value {
	matchAll, ok := goja.AssertFunction(proto.GetSymbol(goja.SymMatchAll))
	if !ok {
		return nil
	}
	it, err := matchAll(v.newRegExp([]goja.Value{v.rt.ToValue(""), v.rt.ToValue("g")}, nil), v.rt.ToValue(""))
	if err != nil {
		return nil
	}
	return it.ToObject(v.rt).Prototype().Get("next")
}

// timeSearch runs a searching native and returns what it returned and how long it ran, less the
// time of the searching natives it called (each of which judged its own).
func (v *Guards) timeSearch(name string, f func() goja.Value) (out goja.Value, own time.Duration) {
	outer := v.searchNested
	v.searchNested = 0
	start := time.Now()
	defer func() {
		total := time.Since(start)
		own = total - v.searchNested
		v.searchNested = outer + total
	}()
	return f(), 0
}

// noGoPanic, deferred in a Go function goja calls, turns a Go runtime error into a TypeError:
// goja passes such a panic on, and it ended the process (a RegExp whose exec was set to
// undefined made goja's replace and split call a nil function). The script's own throws, and
// goja's interrupts, pass as they are.
func (v *Guards) noGoPanic(name string) {
	if r := recover(); r != nil {
		if re, ok := r.(runtime.Error); ok {
			panic(v.rt.NewTypeError("%s: %v", name, re))
		}
		panic(r)
	}
}

// searchCutOff ends an operation that found nothing after running searchCutoff or more: its
// search may have been cut off, and a "no match" crw cannot vouch for must not reach the script.
// When the run is being stopped (a cancel, a signal, the deadline, the heap limit), that is what
// ends it; otherwise the run ends at the bound, a limit passed: a time-bound failure the script
// could catch would make its outcome depend on the machine's speed.
func (v *Guards) searchCutOff(name string) {
	if v.stopping.Load() {
		v.throwRange("%s: the workflow is being stopped", name)
	}
	le := &limits.LimitError{Reason: limits.ReasonRegExpTime, Message: fmt.Sprintf(
		"RangeError: %s: a regular-expression search found no match after running %s or more; crw cuts a search off at %s and cannot tell one cut off from one that found nothing (nested quantifiers such as (a+)+ backtrack exponentially: simplify the pattern or bound the input)",
		name, searchCutoff, RegExpSearchTime)}
	if v.stopLimit != nil {
		v.stopLimit(le)
	}
	v.throwRange("%s", le.Message[len("RangeError: "):])
}
