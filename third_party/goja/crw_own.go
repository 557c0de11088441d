package goja

// This file is crw's addition to goja (see CRW.md): reads of an object's own properties that
// run no script code and build no descriptor object. crw reads every agent.call's options and
// checks every schema object it keeps the JSON of; through Object.getOwnPropertyDescriptor and
// Keys that was ~750 ns and 11 allocations an option, a quarter of a replayed call.

import "github.com/dop251/goja/unistring"

// OwnData reads o's own string-keyed property name as Object.getOwnPropertyDescriptor finds
// it, without calling a getter: found reports whether o has it, accessor whether it is a getter
// or setter (value is then nil), else value is its value (undefined for none). An ordinary
// object's property is read as it is; another's read may run code (a Proxy's trap: refuse a
// Proxy first; an Error's stack, made on its first read, reads its name and message), and what
// that code throws is err.
func (o *Object) OwnData(name string) (value Value, accessor, found bool, err error) {
	var p Value
	key := unistring.NewFromString(name)
	if b, ok := o.self.(*baseObject); ok {
		p = b.getOwnPropStr(key)
	} else if err = o.runtime.try(func() { p = o.self.getOwnPropStr(key) }); err != nil {
		return nil, false, false, err
	}
	if p == nil {
		return nil, false, false, nil
	}
	if vp, ok := p.(*valueProperty); ok {
		if vp.accessor {
			return nil, true, true, nil
		}
		p = vp.value
	}
	if p == nil {
		p = _undefined
	}
	return p, false, true, nil
}

// AppendKeys appends o's own enumerable string keys to dst, in the order Keys gives them.
func (o *Object) AppendKeys(dst []string) []string {
	iter := &enumerableIter{o: o, wrapped: o.self.iterateStringKeys()}
	for item, next := iter.next(); next != nil; item, next = next() {
		dst = append(dst, item.name.String())
	}
	return dst
}

// HasKeys reports whether keys are o's own enumerable string keys, in the order Keys gives
// them, without making them.
func (o *Object) HasKeys(keys []string) bool {
	iter := &enumerableIter{o: o, wrapped: o.self.iterateStringKeys()}
	i := 0
	for item, next := iter.next(); next != nil; item, next = next() {
		if i == len(keys) || item.name.String() != keys[i] {
			return false
		}
		i++
	}
	return i == len(keys)
}
