package vm

import (
	"fmt"
	"strconv"

	"github.com/dop251/goja"
)

// installGuards bounds what reaches the natives goja cannot interrupt (JSON.stringify, the
// Array methods that walk a length, String repeat and padding): each of them, given enough,
// would run for minutes or allocate gigabytes before a cancel, a deadline or the heap watch
// could stop it. They are replaced before any module runs.
func (v *VM) installGuards() {
	rt := v.rt
	v.rangeError = rt.Get("RangeError")
	v.guardStringify()
	array := rt.Get("Array").ToObject(rt)
	proto := array.Get("prototype").ToObject(rt)
	for _, name := range []string{"fill", "join", "toString", "toLocaleString", "sort", "reverse", "indexOf", "lastIndexOf", "includes",
		"map", "forEach", "filter", "reduce", "reduceRight", "every", "some", "find", "findIndex", "findLast", "findLastIndex",
		"slice", "splice", "copyWithin", "concat", "flat", "flatMap", "toSorted", "toReversed", "toSpliced", "with", "at"} {
		v.wrapMethod(proto, name, func(fc goja.FunctionCall) { v.checkLength(fc.This, "Array.prototype."+name) })
	}
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
}

// Bounds of the guards.
const (
	MaxArrayLength     = 1 << 22 // elements an Array method walks
	MaxStringLength    = 1 << 28 // characters repeat and padding make
	MaxStringifyDepth  = 1000    // levels JSON.stringify descends
	stringifyCheckStep = 1024    // JSON.stringify looks for an interrupt this often
)

// throwRange throws a RangeError into the script, as a native does for a bound it passes.
func (v *VM) throwRange(format string, args ...any) {
	ctor, _ := goja.AssertConstructor(v.rangeError)
	obj, err := ctor(nil, v.rt.ToValue(fmt.Sprintf(format, args...)))
	if err != nil {
		panic(err)
	}
	panic(obj)
}

func (v *VM) checkLength(val goja.Value, what string) {
	o, ok := val.(*goja.Object)
	if !ok {
		return
	}
	if n := o.Get("length"); n != nil && n.ToInteger() > MaxArrayLength {
		v.throwRange("%s: a length of %d is more than crw lets a native walk (%d)", what, n.ToInteger(), MaxArrayLength)
	}
}

func (v *VM) checkString(n int64, what string) {
	if n > MaxStringLength {
		v.throwRange("%s: a string of %d characters is more than crw allows (%d)", what, n, MaxStringLength)
	}
}

// guardStringify replaces JSON.stringify with one that descends at most MaxStringifyDepth
// levels and gives up once the script is being interrupted: goja's own is a native that no
// interrupt reaches, and it is quadratic in the depth. A replacer function still runs; an array
// replacer still picks the members, in the object's order.
func (v *VM) guardStringify() {
	rt := v.rt
	json := rt.Get("JSON").ToObject(rt)
	orig, _ := goja.AssertFunction(json.Get("stringify"))
	fn := rt.ToValue(func(fc goja.FunctionCall) goja.Value {
		user, isFn := goja.AssertFunction(fc.Argument(1))
		var allow map[string]bool
		if ro, ok := fc.Argument(1).(*goja.Object); ok && !isFn && ro.ClassName() == "Array" {
			allow = map[string]bool{}
			n := ro.Get("length").ToInteger()
			if n > MaxArrayLength {
				v.throwRange("JSON.stringify: a replacer of %d names", n)
			}
			for i := int64(0); i < n; i++ {
				allow[ro.Get(strconv.FormatInt(i, 10)).String()] = true
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
			if allow != nil && calls > 1 && holder != nil && holder.ClassName() != "Array" && !allow[key.String()] {
				return goja.Undefined()
			}
			if user != nil {
				out, err := user(rc.This, key, val)
				if err != nil {
					panic(err)
				}
				val = out
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

// wrapMethod replaces obj[name] with a function that runs check first, then the original.
func (v *VM) wrapMethod(obj *goja.Object, name string, check func(goja.FunctionCall)) {
	orig, ok := goja.AssertFunction(obj.Get(name))
	if !ok {
		return
	}
	rt := v.rt
	length := obj.Get(name).ToObject(rt).Get("length")
	wrapped := rt.ToValue(func(fc goja.FunctionCall) goja.Value {
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
