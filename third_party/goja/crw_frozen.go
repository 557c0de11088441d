package goja

// This file is crw's addition to goja (see CRW.md): frozen objects and arrays made in one
// step. crw gives every call's result to the script as a frozen object (its output, parsed
// from JSON, too); through goja's API each property is defined on its own, with a property
// record allocated for each and the object's name list grown one at a time.

import "github.com/dop251/goja/unistring"

// NewFrozenObject returns what Object.freeze makes of an ordinary object (prototype
// Object.prototype) whose own properties are names[i] with values[i], in that order (integer
// keys are listed first, ascending, as for any object): each enumerable, not writable and
// not configurable, and the object not extensible. The names must be distinct, and values as
// long as names.
func (r *Runtime) NewFrozenObject(names []string, values []Value) *Object {
	v := &Object{runtime: r}
	o := &baseObject{class: classObject, val: v, prototype: r.global.ObjectPrototype}
	v.self = o
	o.frozenWith(names, values, 0)
	return v
}

// frozenWith gives o, not extensible and with no properties yet, the frozen data properties
// names[i] with values[i], and room for extra more.
func (o *baseObject) frozenWith(names []string, values []Value, extra int) {
	o.values = make(map[unistring.String]Value, len(names)+extra)
	o.propNames = make([]unistring.String, len(names), len(names)+extra)
	props := make([]valueProperty, len(names))
	for i, name := range names {
		key := unistring.NewFromString(name)
		value := values[i]
		if value == nil {
			value = _undefined
		}
		props[i] = valueProperty{value: value, enumerable: true}
		o.values[key] = &props[i]
		o.propNames[i] = key
	}
}

// LazyGetter is the getter of an accessor property that frozen records share
// (NewFrozenRecord): one function object for all of them, frozen, which gives the value the
// record's make returns, made on its first read.
type LazyGetter struct {
	name unistring.String
	fn   *Object
}

// NewLazyGetter returns a LazyGetter for the accessor property name. A read of the property
// through the record, whatever the receiver (a Proxy of the record, Reflect.get with another,
// an object whose prototype is the record), gives the record's value, as a getter made for
// each record would, without calling the function. The function itself, called with a this
// value, reads the record from it, or from the first record on its prototype chain; on any
// other object (a Proxy among them: no trap is run) it throws a TypeError.
func (r *Runtime) NewLazyGetter(name string) *LazyGetter {
	g := &LazyGetter{name: unistring.NewFromString(name)}
	g.fn = r.newNativeFunc(func(call FunctionCall) Value {
		for o, _ := call.This.(*Object); o != nil; o = o.self.proto() {
			rec, ok := o.self.(*frozenRecord)
			if !ok {
				if _, proxy := o.self.(*proxyObject); proxy {
					break // its prototype would be a trap's answer
				}
				continue
			}
			if rec.getter != g {
				break
			}
			return rec.value()
		}
		panic(r.NewTypeError("the getter of %s was called on an object that does not have it", g.name))
	}, "get "+g.name, 0)
	g.fn.self.preventExtensions(true)
	for _, prop := range g.fn.self.stringKeys(true, nil) {
		g.fn.self.defineOwnPropertyStr(prop.string(), PropertyDescriptor{Writable: FLAG_FALSE, Configurable: FLAG_FALSE}, true)
	}
	return g
}

// frozenRecord is an ordinary object with a lazily made accessor property (NewFrozenRecord).
// Its properties are its baseObject's, as any ordinary object's: only the getter's value is
// kept here.
type frozenRecord struct {
	baseObject
	getter *LazyGetter
	make   func() Value // nil once made
	made   Value
}

// value is the record's getter's value, made on its first read.
func (o *frozenRecord) value() Value {
	if o.made == nil {
		o.made, o.make = o.make(), nil
		if o.made == nil {
			o.made = _undefined
		}
	}
	return o.made
}

// getStr reads the getter's property as its own getter would, whatever the receiver.
func (o *frozenRecord) getStr(name unistring.String, receiver Value) Value {
	if name == o.getter.name {
		return o.value()
	}
	return o.baseObject.getStr(name, receiver)
}

// NewFrozenRecord is NewFrozenObject with one more property after names, getter's accessor
// property, enumerable and not configurable: its value is what make returns, called on the
// property's first read (through the record or getter's function), and the same value on
// every read after. make may throw (panic with a JS value) as a getter may.
func (r *Runtime) NewFrozenRecord(names []string, values []Value, getter *LazyGetter, make func() Value) *Object {
	v := &Object{runtime: r}
	o := &frozenRecord{baseObject: baseObject{class: classObject, val: v, prototype: r.global.ObjectPrototype}, getter: getter, make: make}
	v.self = o
	o.frozenWith(names, values, 1)
	o.values[getter.name] = &valueProperty{accessor: true, enumerable: true, getterFunc: getter.fn}
	o.propNames = append(o.propNames, getter.name)
	return v
}

// NewFrozenArray returns what Object.freeze makes of an array of values: each element
// enumerable, not writable and not configurable, its length not writable, the array not
// extensible.
func (r *Runtime) NewFrozenArray(values []Value) *Object {
	a := r.newArrayObject()
	props := make([]valueProperty, len(values))
	elems := make([]Value, len(values))
	for i, value := range values {
		if value == nil {
			value = _undefined
		}
		props[i] = valueProperty{value: value, enumerable: true}
		elems[i] = &props[i]
	}
	a.values, a.length = elems, uint32(len(values))
	a.objCount, a.propValueCount = len(values), len(values)
	a.lengthProp.writable = false
	a.extensible = false
	return a.val
}
