package goja

// This file is crw's addition to goja (see CRW.md): reads of an object's own properties that
// build no descriptor object, a promise only Go settles, and whether a promise was awaited.
// crw reads every agent.call's options, checks every schema object it keeps the JSON of and
// makes a promise for every call; through goja's API that took ~30% of a replayed call.

import "github.com/dop251/goja/unistring"

// OwnData reads o's own string-keyed property name as Object.getOwnPropertyDescriptor finds
// it, without calling a getter: found reports whether o has it, accessor whether it is a getter
// or setter (value is then nil), else value is its value (undefined for none). An ordinary
// object's or an array's property is read as it is; another's read may run code (a Proxy's trap: refuse a
// Proxy first; an Error's stack, made on its first read, reads its name and message), and what
// that code throws is err, as a call of Object.getOwnPropertyDescriptor from Go gives it:
// an exception, a stack overflow or an interrupt (runWrapped).
func (o *Object) OwnData(name string) (value Value, accessor, found bool, err error) {
	var p Value
	key := unistring.NewFromString(name)
	switch self := o.self.(type) {
	case *baseObject:
		p = self.getOwnPropStr(key)
	case *frozenRecord:
		p = self.getOwnPropStr(key)
	case *arrayObject:
		p = self.getOwnPropStr(key)
	default:
		if err = o.runtime.runWrapped(func() { p = o.self.getOwnPropStr(key) }); err != nil {
			return nil, false, false, err
		}
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
	if b := o.ordinary(); b != nil {
		b.eachEnumerableKey(func(name unistring.String) bool {
			dst = append(dst, name.String())
			return true
		})
		return dst
	}
	iter := &enumerableIter{o: o, wrapped: o.self.iterateStringKeys()}
	for item, next := iter.next(); next != nil; item, next = next() {
		dst = append(dst, item.name.String())
	}
	return dst
}

// HasKeys reports whether keys are o's own enumerable string keys, in the order Keys gives
// them, without making them.
func (o *Object) HasKeys(keys []string) bool {
	i := 0
	if b := o.ordinary(); b != nil {
		same := b.eachEnumerableKey(func(name unistring.String) bool {
			if i == len(keys) || name.String() != keys[i] {
				return false
			}
			i++
			return true
		})
		return same && i == len(keys)
	}
	iter := &enumerableIter{o: o, wrapped: o.self.iterateStringKeys()}
	for item, next := iter.next(); next != nil; item, next = next() {
		if i == len(keys) || item.name.String() != keys[i] {
			return false
		}
		i++
	}
	return i == len(keys)
}

// ordinary is o's baseObject when o is an ordinary object (a frozen record is one), else nil.
func (o *Object) ordinary() *baseObject {
	switch self := o.self.(type) {
	case *baseObject:
		return self
	case *frozenRecord:
		return &self.baseObject
	}
	return nil
}

// eachEnumerableKey calls fn with an ordinary object's own enumerable string keys in the order
// Keys gives them (integer keys first, ascending), as its iterator would, until fn returns
// false, and reports whether none did. fn runs no script code, so the names cannot change
// under it, and the iterator's copy of them is not needed.
func (o *baseObject) eachEnumerableKey(fn func(unistring.String) bool) bool {
	o.ensurePropOrder()
	for _, name := range o.propNames {
		prop := o.values[name]
		if prop == nil {
			continue
		}
		if vp, ok := prop.(*valueProperty); ok && !vp.enumerable {
			continue
		}
		if !fn(name) {
			return false
		}
	}
	return true
}

// NewGoPromise is NewPromise for a promise only Go settles: its resolving functions are Go's
// alone, and no function objects are made for them (two a promise, which crw makes for every
// agent.call). resolve and reject do what NewPromise's do (the steps of
// createResolvingFunctions), and run the promise jobs they enqueue before they return.
func (r *Runtime) NewGoPromise() (promise *Promise, resolve, reject func(reason interface{}) error) {
	p := r.newPromise(r.getPromisePrototype())
	alreadyResolved := false
	resolve = func(x interface{}) error {
		return r.runWrapped(func() {
			if alreadyResolved {
				return
			}
			alreadyResolved = true
			resolution := r.ToValue(x)
			if resolution.SameAs(p.val) {
				p.reject(r.NewTypeError("Promise self-resolution"))
				return
			}
			if obj, ok := resolution.(*Object); ok {
				var thenAction Value
				if ex := r.vm.try(func() { thenAction = obj.self.getStr("then", nil) }); ex != nil {
					p.reject(ex.val)
					return
				}
				if call, ok := assertCallable(thenAction); ok {
					r.enqueuePromiseJob(r.newPromiseResolveThenableJob(p, resolution, &jobCallback{callback: call}))
					return
				}
			}
			p.fulfill(resolution)
		})
	}
	reject = func(x interface{}) error {
		return r.runWrapped(func() {
			if alreadyResolved {
				return
			}
			alreadyResolved = true
			p.reject(r.ToValue(x))
		})
	}
	return p, resolve, reject
}

// Handled reports whether a reaction was ever added to p (by await, then, Promise.all or any
// other way), before or after it settled: what no script can reach or replace.
func (p *Promise) Handled() bool { return p.handled }
