// Package jsutil holds the small goja helpers the runtime packages share: coded errors, the
// intrinsics script values are read with (JSON in and out of the VM, thrown values), deep
// freezing.
package jsutil

import (
	"fmt"
	"math/big"
	"net/url"
	"sync"

	"github.com/dop251/goja"

	"github.com/crw-dev/crw/errs"
)

// Throw raises a JS Error carrying a stable code; it must be called from a native function
// running on the loop goroutine.
func Throw(rt *goja.Runtime, code errs.Code, format string, args ...any) {
	panic(NewError(rt, code, "", fmt.Sprintf(format, args...)))
}

// ThrowError raises err as a JS Error: its code and reason when it has them, else
// invalid_request. prefix goes before its message.
func ThrowError(rt *goja.Runtime, prefix string, err error) {
	code, reason := errs.InvalidRequest, ""
	if c, ok := err.(errs.Coded); ok {
		code, reason = c.Code(), c.Reason()
	}
	panic(NewError(rt, code, reason, prefix+err.Error()))
}

// NewError builds `new Error(message)` with a code property and, when reason is not "", a
// reason property: the finer cause a script may branch on.
func NewError(rt *goja.Runtime, code errs.Code, reason, message string) *goja.Object {
	ctor, _ := goja.AssertConstructor(rt.Get("Error"))
	obj, err := ctor(nil, rt.ToValue(message))
	if err != nil {
		panic(err)
	}
	_ = obj.Set("code", string(code))
	if reason != "" {
		_ = obj.Set("reason", reason)
	}
	return obj
}

// Func wraps fn as a JS function called name, so that a stack shows "at name (native)"
// instead of the Go symbol goja would take the name from.
func Func(rt *goja.Runtime, name string, fn any) goja.Value {
	v := rt.ToValue(fn)
	if obj, ok := v.(*goja.Object); ok {
		_ = obj.DefineDataProperty("name", rt.ToValue(name), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	}
	return v
}

// FileName undoes the URL escaping goja applies to the file names of source-mapped programs
// ("/my dir/x.ts" is reported as "/my%20dir/x.ts").
func FileName(name string) string {
	if u, err := url.Parse(name); err == nil && u.Scheme == "" {
		if s, err := url.PathUnescape(name); err == nil {
			return s
		}
	}
	return name
}

// deepFreezeSrc takes the built-ins it uses when it is evaluated (by Capture, before any script
// runs) and walks keys by index: a script that later replaces Object.freeze or an array's
// iterator cannot leave a value unfrozen.
const deepFreezeSrc = `(function () {
	const isFrozen = Object.isFrozen, freeze = Object.freeze, keys = Object.keys;
	return function deepFreeze(o) {
		if (o !== null && typeof o === "object" && !isFrozen(o)) {
			freeze(o);
			const ks = keys(o);
			for (let i = 0; i < ks.length; i++) deepFreeze(o[ks[i]]);
		}
		return o;
	};
})()`

// deepFreezeProgram is compiled when a first runtime needs it, not when a process starts.
var deepFreezeProgram = sync.OnceValue(func() *goja.Program { return goja.MustCompile("deepFreeze.js", deepFreezeSrc, true) })

// DeepFreeze freezes a value and everything reachable from it.
func (in *Intrinsics) DeepFreeze(x goja.Value) goja.Value {
	out, err := in.deepFreeze(goja.Undefined(), x)
	if err != nil {
		panic(err)
	}
	return out
}

// TypeName names the kind of a JS value for messages: undefined, null, function, array, object,
// string, number, boolean, bigint, symbol or Proxy.
func TypeName(v goja.Value) string {
	switch {
	case v == nil || goja.IsUndefined(v):
		return "undefined"
	case goja.IsNull(v):
		return "null"
	}
	if o, ok := v.(*goja.Object); ok {
		if IsProxy(o) {
			return "Proxy" // its class is a trap's to tell, or a TypeError once revoked
		}
		if _, fn := goja.AssertFunction(o); fn {
			return "function"
		}
		if o.ClassName() == "Array" {
			return "array"
		}
		return "object"
	}
	if _, sym := v.(*goja.Symbol); sym {
		return "symbol"
	}
	switch v.Export().(type) {
	case string:
		return "string"
	case int64, float64:
		return "number"
	case bool:
		return "boolean"
	case *big.Int:
		return "bigint"
	}
	return "symbol"
}
