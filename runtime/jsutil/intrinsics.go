package jsutil

import (
	"errors"
	"reflect"

	"github.com/dop251/goja"
)

// Intrinsics are the built-ins crw reads script values with, taken before any module of the
// workflow runs: a script that later replaces Object.getOwnPropertyDescriptor, Object.freeze,
// JSON or Array.prototype changes nothing crw reads or freezes.
type Intrinsics struct {
	rt         *goja.Runtime
	gopd       goja.Callable // Object.getOwnPropertyDescriptor
	parse      goja.Callable // JSON.parse
	freeze     goja.Callable // Object.freeze
	isFrozen   goja.Callable // Object.isFrozen
	deepFreeze goja.Callable
	strValueOf goja.Callable // String.prototype.valueOf: a String object's string
}

// Capture takes rt's intrinsics; call it before any script code runs in rt.
func Capture(rt *goja.Runtime) *Intrinsics {
	in := &Intrinsics{rt: rt}
	object := rt.Get("Object").ToObject(rt)
	in.gopd, _ = goja.AssertFunction(object.Get("getOwnPropertyDescriptor"))
	in.freeze, _ = goja.AssertFunction(object.Get("freeze"))
	in.isFrozen, _ = goja.AssertFunction(object.Get("isFrozen"))
	fn, err := rt.RunProgram(deepFreezeProgram())
	if err != nil {
		panic(err)
	}
	in.deepFreeze, _ = goja.AssertFunction(fn)
	in.strValueOf, _ = goja.AssertFunction(rt.Get("String").ToObject(rt).Get("prototype").ToObject(rt).Get("valueOf"))
	json := rt.Get("JSON").ToObject(rt)
	in.parse, _ = goja.AssertFunction(json.Get("parse"))
	return in
}

var proxyType = reflect.TypeOf(goja.Proxy{})

// IsProxy reports whether o is a Proxy, revoked or not: every read of one runs script code (its
// traps), so crw reads none.
func IsProxy(o *goja.Object) bool { return o.ExportType() == proxyType }

// ErrProxy is what reading a Proxy gives.
var ErrProxy = errors.New("a Proxy")

// Prop is one property as its descriptor has it.
type Prop struct {
	Found    bool
	Accessor bool       // a getter or setter: Value is nil
	Getter   goja.Value // the getter of an accessor, when it has one
	Value    goja.Value // the value of a data property
}

// Own reads o's own property name without running script code: a getter is reported, not
// called. A Proxy is ErrProxy.
func (in *Intrinsics) Own(o *goja.Object, name string) (Prop, error) {
	var p Prop
	if IsProxy(o) {
		return p, ErrProxy
	}
	value, accessor, found, err := o.OwnData(name)
	if err != nil {
		return p, err
	}
	p.Found = found
	if !accessor {
		p.Value = value
		return p, nil
	}
	p.Accessor = true
	// The getter itself, which only the descriptor gives: a rare read (a thrown value's).
	d, err := in.gopd(goja.Undefined(), o, in.rt.ToValue(name))
	if err != nil {
		return p, err
	}
	desc, ok := d.(*goja.Object)
	if !ok {
		return p, nil
	}
	// desc is a fresh ordinary object, crw's alone: without its prototype, a read of it sees
	// only its own members, never what a script put on Object.prototype.
	if err := desc.SetPrototype(nil); err != nil {
		return p, err
	}
	if g := desc.Get("get"); g != nil && !goja.IsUndefined(g) {
		p.Getter = g
	}
	return p, nil
}

// maxProtoChain bounds the prototypes Data walks.
const maxProtoChain = 64

// Data reads property name of o or of its prototypes, as o.name would find it, without running
// script code: a getter is reported, not called; a Proxy on the way is ErrProxy.
func (in *Intrinsics) Data(o *goja.Object, name string) (Prop, error) {
	for i := 0; o != nil && i < maxProtoChain; i++ {
		p, err := in.Own(o, name)
		if err != nil || p.Found {
			return p, err
		}
		o = o.Prototype()
	}
	return Prop{}, nil
}

// Parse is the pristine JSON.parse.
func (in *Intrinsics) Parse(data []byte) (goja.Value, error) {
	if len(data) == 0 {
		return goja.Null(), nil
	}
	return in.parse(goja.Undefined(), in.rt.ToValue(string(data)))
}
