package vm

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"

	"github.com/crw-dev/crw/runtime/jsutil"
	"github.com/crw-dev/crw/runtime/loader"
)

// MaxRegExpNesting bounds how deeply the groups of a pattern compiled at run time may nest: the
// regexp2 engine goja falls back to for backreferences and lookarounds recurses once per group
// while it compiles, and new RegExp("(".repeat(1e6) + ")".repeat(1e6) + "\\1") overflowed the Go
// stack and ended the process. It is the bound of a regular-expression literal in a module.
const MaxRegExpNesting = loader.MaxNesting

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
func (v *VM) guardRegExpPatterns() error {
	rt := v.rt
	ctor := rt.Get("RegExp").ToObject(rt)
	v.regExp = ctor
	nf, err := nativeFuncOf(ctor)
	if err != nil {
		return err
	}
	call, construct := *nf.call, *nf.construct
	*nf.call = func(fc goja.FunctionCall) goja.Value {
		args, same := v.regExpArgs(fc.Arguments, true)
		if same {
			return args[0]
		}
		fc.Arguments = args
		return call(fc)
	}
	*nf.construct = func(args []goja.Value, newTarget *goja.Object) *goja.Object {
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
				s := p.ToString()
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
func (v *VM) regExpArgs(args []goja.Value, called bool) (out []goja.Value, same bool) {
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
			out[0] = orEmpty(p.Get("source")).ToString()
			if goja.IsUndefined(flags) {
				out[1] = orEmpty(p.Get("flags")).ToString()
			}
		} else {
			out[0] = p.ToString()
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
func (v *VM) checkPattern(p goja.Value) {
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
func (v *VM) stringMatcher(fc goja.FunctionCall, orig goja.Callable, sym *goja.Symbol, flags string) goja.Value {
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
				if !strings.ContainsRune(f.ToString().String(), 'g') {
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
func (v *VM) guardRegExpSearches() error {
	rt := v.rt
	proto := v.regExp.Get("prototype").ToObject(rt)
	stringArg := func(fc *goja.FunctionCall) {
		if _, ok := fc.This.(*goja.Object); ok && len(fc.Arguments) > 0 {
			fc.Arguments[0] = fc.Arguments[0].ToString()
		}
	}
	isNull := func(_ goja.FunctionCall, out goja.Value) bool { return goja.IsNull(out) }
	searches := []struct {
		fn      goja.Value
		name    string
		prep    func(*goja.FunctionCall)
		noMatch func(fc goja.FunctionCall, out goja.Value) bool
	}{
		{proto.Get("exec"), "RegExp.prototype.exec", stringArg, isNull},
		{proto.Get("test"), "RegExp.prototype.test", stringArg, func(_ goja.FunctionCall, out goja.Value) bool { return !out.ToBoolean() }},
		{proto.GetSymbol(goja.SymMatch), "RegExp.prototype[Symbol.match]", stringArg, isNull},
		{proto.GetSymbol(goja.SymSearch), "RegExp.prototype[Symbol.search]", stringArg, func(_ goja.FunctionCall, out goja.Value) bool { return out.ToInteger() < 0 }},
		{proto.GetSymbol(goja.SymSplit), "RegExp.prototype[Symbol.split]", stringArg, func(_ goja.FunctionCall, out goja.Value) bool {
			o, ok := out.(*goja.Object)
			return ok && o.Get("length").ToInteger() <= 1
		}},
		{proto.GetSymbol(goja.SymReplace), "RegExp.prototype[Symbol.replace]", func(fc *goja.FunctionCall) {
			stringArg(fc)
			if len(fc.Arguments) > 1 {
				if _, fn := goja.AssertFunction(fc.Arguments[1]); !fn {
					fc.Arguments[1] = fc.Arguments[1].ToString()
				}
			}
		}, func(fc goja.FunctionCall, out goja.Value) bool { return out.SameAs(fc.Argument(0)) }},
		{v.regExpIteratorNext(proto), "%RegExpStringIteratorPrototype%.next", nil, func(_ goja.FunctionCall, out goja.Value) bool {
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
		*nf.call = func(fc goja.FunctionCall) goja.Value {
			if s.prep != nil {
				s.prep(&fc)
			}
			out, own := v.timeSearch(s.name, func() goja.Value { return orig(fc) })
			if own >= searchCutoff && s.noMatch(fc, out) {
				v.searchCutOff(s.name)
			}
			return out
		}
	}
	return nil
}

// regExpIteratorNext is the next method of the iterators String.prototype.matchAll returns.
func (v *VM) regExpIteratorNext(proto *goja.Object) goja.Value {
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
// time of the searching natives it called (each of which judged its own). A Go runtime error in
// goja's code becomes a TypeError: a RegExp whose exec was set to undefined made goja's replace
// and split call a nil function, which ended the process.
func (v *VM) timeSearch(name string, f func() goja.Value) (out goja.Value, own time.Duration) {
	outer := v.searchNested
	v.searchNested = 0
	start := time.Now()
	defer func() {
		total := time.Since(start)
		own = total - v.searchNested
		v.searchNested = outer + total
		if r := recover(); r != nil {
			if re, ok := r.(runtime.Error); ok {
				panic(v.rt.NewTypeError("%s: %v (a RegExp whose exec is not a function?)", name, re))
			}
			panic(r)
		}
	}()
	return f(), 0
}

// searchCutOff ends an operation that found nothing after running searchCutoff or more: its
// search may have been cut off, and a "no match" crw cannot vouch for must not reach the script.
// When the run is being stopped (a cancel, a signal, the deadline, the heap limit), that is what
// ends it; otherwise the run ends at the bound, a limit passed: a time-bound failure the script
// could catch would make its outcome depend on the machine's speed.
func (v *VM) searchCutOff(name string) {
	if v.stopping.Load() {
		v.throwRange("%s: the workflow is being stopped", name)
	}
	le := &LimitError{Reason: ReasonRegExpTime, Message: fmt.Sprintf(
		"RangeError: %s: a regular-expression search found no match after running %s or more; crw cuts a search off at %s and cannot tell one cut off from one that found nothing (nested quantifiers such as (a+)+ backtrack exponentially: simplify the pattern or bound the input)",
		name, searchCutoff, RegExpSearchTime)}
	if v.stopLimit != nil {
		v.stopLimit(le)
	}
	v.throwRange("%s", le.Message[len("RangeError: "):])
}
