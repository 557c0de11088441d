package natives

import (
	"fmt"
	"reflect"
	"strconv"

	"github.com/dop251/goja"

	"github.com/crw-dev/crw/runtime/jsutil"
)

// Install bounds what reaches the natives of rt goja cannot interrupt (JSON.stringify, the
// Array methods that walk a length, String repeat and padding, the RegExp searches, code built
// at run time): each of them, given enough, would run for minutes or allocate gigabytes before
// a cancel, a deadline or the heap watch could stop it. They are replaced before any module
// runs; heapBytes is the workflow's heap limit, which no buffer may pass.
func Install(rt *goja.Runtime, heapBytes int64) (*Guards, error) {
	v := &Guards{rt: rt, heapBytes: heapBytes}
	v.rangeError = rt.Get("RangeError")
	v.gopd, _ = goja.AssertFunction(rt.Get("Object").ToObject(rt).Get("getOwnPropertyDescriptor"))
	v.guardRuntimeCode()
	if err := v.guardRegExpPatterns(); err != nil {
		return nil, err
	}
	if err := v.guardRegExpSearches(); err != nil {
		return nil, err
	}
	v.guardStringify()
	v.wrapMethod(rt.Get("JSON").ToObject(rt), "parse", v.checkParse)
	array := rt.Get("Array").ToObject(rt)
	proto := array.Get("prototype").ToObject(rt)
	for _, name := range []string{"fill", "join", "toString", "toLocaleString", "sort", "reverse", "indexOf", "lastIndexOf", "includes",
		"map", "forEach", "filter", "reduce", "reduceRight", "every", "some", "find", "findIndex", "findLast", "findLastIndex",
		"slice", "splice", "copyWithin", "concat", "flat", "flatMap", "toSorted", "toReversed", "toSpliced", "with", "at"} {
		v.wrapMethod(proto, name, func(fc goja.FunctionCall) { v.checkLength(fc.This, "Array.prototype."+name) })
	}
	// Spreading, destructuring and apply walk an array's length in one native step: a sparse
	// array of length 2^32-1 would make billions of elements.
	for _, name := range []string{"keys", "entries"} {
		v.wrapMethod(proto, name, func(fc goja.FunctionCall) { v.checkLength(fc.This, "Array.prototype."+name) })
	}
	v.wrapMethod(proto, "values", func(fc goja.FunctionCall) { v.checkLength(fc.This, "an array's iterator") })
	_ = proto.DefineDataPropertySymbol(goja.SymIterator, proto.Get("values"), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	fnProto := rt.Get("Function").ToObject(rt).Get("prototype").ToObject(rt)
	v.wrapMethod(fnProto, "apply", func(fc goja.FunctionCall) { v.checkLength(fc.Argument(1), "Function.prototype.apply") })
	reflect := rt.Get("Reflect").ToObject(rt)
	v.wrapMethod(reflect, "apply", func(fc goja.FunctionCall) { v.checkLength(fc.Argument(2), "Reflect.apply") })
	v.wrapMethod(reflect, "construct", func(fc goja.FunctionCall) { v.checkLength(fc.Argument(1), "Reflect.construct") })
	// Object.keys and the like make an array of every index of a string or a typed array.
	object := rt.Get("Object").ToObject(rt)
	for _, name := range []string{"keys", "values", "entries", "getOwnPropertyNames", "assign"} {
		v.wrapMethod(object, name, func(fc goja.FunctionCall) {
			for _, a := range fc.Arguments {
				v.checkIndexed(a, "Object."+name)
			}
		})
	}
	v.wrapMethod(reflect, "ownKeys", func(fc goja.FunctionCall) { v.checkIndexed(fc.Argument(0), "Reflect.ownKeys") })
	v.guardBuffers()
	v.wrapMethod(array, "from", func(fc goja.FunctionCall) { v.checkLength(fc.Argument(0), "Array.from") })
	str := rt.Get("String").ToObject(rt).Get("prototype").ToObject(rt)
	v.wrapMethod(str, "repeat", func(fc goja.FunctionCall) {
		if s, ok := fc.This.(goja.String); ok {
			if n := fc.Argument(0).ToInteger(); n > 0 && int64(s.Length()) > MaxStringLength/n {
				v.checkString(int64(s.Length())*n, "String.prototype.repeat")
			}
		}
	})
	for _, name := range []string{"padStart", "padEnd"} {
		v.wrapMethod(str, name, func(fc goja.FunctionCall) { v.checkString(fc.Argument(0).ToInteger(), "String.prototype."+name) })
	}
	v.guardOutputs()
	return v, nil
}

// Bounds of the guards.
const (
	MaxArrayLength     = 1 << 22 // elements an Array method walks
	MaxStringLength    = 1 << 28 // characters repeat and padding make
	MaxStringifyDepth  = 1000    // levels JSON.stringify descends
	stringifyCheckStep = 1024    // JSON.stringify looks for an interrupt this often
)

// throwRange throws a RangeError into the script, as a native does for a bound it passes.
func (v *Guards) throwRange(format string, args ...any) {
	ctor, _ := goja.AssertConstructor(v.rangeError)
	obj, err := ctor(nil, v.rt.ToValue(fmt.Sprintf(format, args...)))
	if err != nil {
		panic(err)
	}
	panic(obj)
}

func (v *Guards) checkLength(val goja.Value, what string) {
	o, ok := val.(*goja.Object)
	if !ok {
		return
	}
	if n := o.Get("length"); n != nil && n.ToInteger() > MaxArrayLength {
		v.throwRange("%s: a length of %d is more than crw lets a native walk (%d)", what, n.ToInteger(), MaxArrayLength)
	}
}

// checkIndexed refuses a string or a typed array with more indexes than MaxArrayLength.
func (v *Guards) checkIndexed(val goja.Value, what string) {
	if s, ok := val.(goja.String); ok {
		if s.Length() > MaxArrayLength {
			v.throwRange("%s: a string of %d characters has more indexes than crw lets a native list (%d)", what, s.Length(), MaxArrayLength)
		}
		return
	}
	o, ok := val.(*goja.Object)
	if !ok || jsutil.IsProxy(o) {
		return
	}
	// A typed array exports as a Go slice of numbers, a String object is of class String:
	// every index of either is a property. An Array lists only the elements it has.
	if t := o.ExportType(); o.ClassName() == "String" || (t != nil && t.Kind() == reflect.Slice && o.ClassName() != "Array") {
		v.checkLength(val, what)
	}
}

// guardBuffers refuses an ArrayBuffer or a typed array larger than the heap limit before it
// is allocated: such a buffer could never be held, and filling it is one native step.
func (v *Guards) guardBuffers() {
	rt := v.rt
	fnProto := rt.Get("Function").ToObject(rt).Get("prototype").ToObject(rt)
	hasInstance, _ := goja.AssertFunction(fnProto.GetSymbol(goja.SymHasInstance))
	for _, name := range []string{"ArrayBuffer", "Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array",
		"Int32Array", "Uint32Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array"} {
		target, ok := rt.Get(name).(*goja.Object)
		if !ok {
			continue
		}
		ctor, ok := goja.AssertConstructor(target)
		if !ok {
			continue
		}
		size := int64(1)
		if bpe := target.Get("BYTES_PER_ELEMENT"); bpe != nil && !goja.IsUndefined(bpe) {
			size = bpe.ToInteger()
		}
		name := name
		call, _ := goja.AssertFunction(target)
		proxy := rt.ToValue(rt.NewProxy(target, &goja.ProxyTrapConfig{
			// A Proxy is callable only with an apply trap; instanceof needs a callable.
			Apply: func(t *goja.Object, this goja.Value, args []goja.Value) goja.Value {
				out, err := call(this, args...)
				if err != nil {
					panic(err)
				}
				return out
			},
			Construct: func(t *goja.Object, args []goja.Value, newTarget *goja.Object) *goja.Object {
				v.checkBuffer(name, args, size)
				out, err := ctor(newTarget, args...)
				if err != nil {
					panic(err)
				}
				return out
			},
		})).(*goja.Object)
		if p, ok := target.Get("prototype").(*goja.Object); ok {
			_ = p.DefineDataProperty("constructor", proxy, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
		}
		// goja's Proxy has no instanceof of its own: x instanceof Uint8Array asks the target.
		_ = target.DefineDataPropertySymbol(goja.SymHasInstance, rt.ToValue(func(fc goja.FunctionCall) goja.Value {
			this := fc.This
			if this.SameAs(proxy) {
				this = target
			}
			out, err := hasInstance(this, fc.Argument(0))
			if err != nil {
				panic(err)
			}
			return out
		}), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
		_ = rt.GlobalObject().DefineDataProperty(name, proxy, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
}

func (v *Guards) checkBuffer(name string, args []goja.Value, size int64) {
	if len(args) == 0 {
		return
	}
	n := int64(0)
	switch a := args[0].(type) {
	case *goja.Object:
		switch a.ClassName() {
		case "ArrayBuffer", "SharedArrayBuffer":
			return // a view of a buffer that exists
		}
		if l := a.Get("length"); l != nil && !goja.IsUndefined(l) {
			n = l.ToInteger()
		}
	default:
		n = args[0].ToInteger()
	}
	if n > 0 && n > v.heapBytes/size {
		v.throwRange("%s: %d elements of %d bytes are more than the workflow's heap limit of %d MiB", name, n, size, v.heapBytes>>20)
	}
}

func (v *Guards) checkString(n int64, what string) {
	if n > MaxStringLength {
		v.throwRange("%s: a string of %d characters is more than crw allows (%d)", what, n, MaxStringLength)
	}
}

// guardStringify replaces JSON.stringify with one that descends at most MaxStringifyDepth
// levels and gives up once the script is being interrupted: goja's own is a native that no
// interrupt reaches, and it is quadratic in the depth. A replacer function still runs; an array
// replacer still picks the members, in its own order.
func (v *Guards) guardStringify() {
	rt := v.rt
	json := rt.Get("JSON").ToObject(rt)
	orig, _ := goja.AssertFunction(json.Get("stringify"))
	fn := rt.ToValue(func(fc goja.FunctionCall) goja.Value {
		user, isFn := goja.AssertFunction(fc.Argument(1))
		var names []string // an array replacer: the members to write, in its order
		if ro, ok := fc.Argument(1).(*goja.Object); ok && !isFn && ro.ClassName() == "Array" {
			n := ro.Get("length").ToInteger()
			if n > MaxArrayLength {
				v.throwRange("JSON.stringify: a replacer of %d names", n)
			}
			seen := map[string]bool{}
			for i := int64(0); i < n; i++ {
				e := ro.Get(strconv.FormatInt(i, 10))
				if _, str := e.(goja.String); !str && jsutil.TypeName(e) != "number" {
					continue // only strings and numbers name members, as in JSON.stringify
				}
				if k := e.String(); !seen[k] {
					seen[k] = true
					names = append(names, k)
				}
			}
		}
		depth := map[*goja.Object]int{}
		calls := 0
		replacer := rt.ToValue(func(rc goja.FunctionCall) goja.Value {
			calls++
			if calls%stringifyCheckStep == 0 && v.stopping.Load() {
				v.throwRange("JSON.stringify: the workflow is being stopped")
			}
			holder, _ := rc.This.(*goja.Object)
			key, val := rc.Argument(0), rc.Argument(1)
			if user != nil {
				out, err := user(rc.This, key, val)
				if err != nil {
					panic(err)
				}
				val = out
			}
			if names != nil {
				val = v.picked(val, names)
			}
			if o, ok := val.(*goja.Object); ok {
				d := depth[holder] + 1
				if d > MaxStringifyDepth {
					v.throwRange("JSON.stringify: the value is nested deeper than %d levels", MaxStringifyDepth)
				}
				depth[o] = d
			}
			return val
		})
		out, err := orig(goja.Undefined(), fc.Argument(0), replacer, fc.Argument(2))
		if err != nil {
			panic(err)
		}
		return out
	}).(*goja.Object)
	_ = fn.DefineDataProperty("name", rt.ToValue("stringify"), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	_ = fn.DefineDataProperty("length", rt.ToValue(3), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	_ = json.DefineDataProperty("stringify", fn, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// picked is an object with only the named members of val, in the order of names: what an
// array replacer makes JSON.stringify write of an object. Other values are left as they are.
func (v *Guards) picked(val goja.Value, names []string) goja.Value {
	o, ok := val.(*goja.Object)
	if !ok {
		return val
	}
	if _, fn := goja.AssertFunction(o); fn {
		return val
	}
	if !jsutil.IsProxy(o) {
		switch o.ClassName() {
		case "Array", "String", "Number", "Boolean", "BigInt":
			return val
		}
	}
	out := v.rt.NewObject()
	for _, k := range names {
		if m := o.Get(k); m != nil && !goja.IsUndefined(m) {
			_ = out.Set(k, m)
		}
	}
	return out
}

// wrapMethod replaces obj[name] with a function that runs check first, then the original.
// checkParse bounds what JSON.parse is given: goja's parser recurses once per level, and a
// text of a few million brackets overflows the Go stack, which ends the process.
func (v *Guards) checkParse(fc goja.FunctionCall) {
	if len(fc.Arguments) == 0 {
		return
	}
	// ToString as JSON.parse does it (a Symbol is a TypeError); an object's toString runs here,
	// once, and the string it gave is what the parser gets.
	text := fc.Arguments[0].ToString().String()
	if _, isObject := fc.Arguments[0].(*goja.Object); isObject {
		fc.Arguments[0] = v.rt.ToValue(text)
	}
	depth, inString := 0, false
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			if depth++; depth > MaxStringifyDepth {
				v.throwRange("JSON.parse: the text nests deeper than %d levels", MaxStringifyDepth)
			}
		case c == ']' || c == '}':
			depth--
		}
	}
}

func (v *Guards) wrapMethod(obj *goja.Object, name string, check func(goja.FunctionCall)) {
	orig, ok := goja.AssertFunction(obj.Get(name))
	if !ok {
		return
	}
	rt := v.rt
	length := obj.Get(name).ToObject(rt).Get("length")
	wrapped := rt.ToValue(func(fc goja.FunctionCall) goja.Value {
		defer v.noGoPanic(name)
		check(fc)
		out, err := orig(fc.This, fc.Arguments...)
		if err != nil {
			panic(err)
		}
		return out
	}).(*goja.Object)
	_ = wrapped.DefineDataProperty("name", rt.ToValue(name), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	_ = wrapped.DefineDataProperty("length", length, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	_ = obj.DefineDataProperty(name, wrapped, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}
