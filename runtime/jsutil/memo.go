package jsutil

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// A Memo keeps the JSON of objects it serialized (DataOnly) with what the walk read of each:
// every object's own enumerable keys and every member's value. An object given again is
// checked by reading its keys (HasKeys, which makes none) and those members as own data
// properties (OwnData), and its JSON is reused when all are as they were: the walk reads each
// member and writes the JSON, the check only compares. A workflow passes the same few schema
// objects to thousands of calls.
//
// The check reads what the walk read, so a member that is still an own data property holding
// the same value (the same object, for an object) gives the same JSON; a member made a getter,
// or a hole, is a change (a getter is never called), and the walk refuses it or reads the hole
// as it does. Keys are compared as Go strings, in which a lone surrogate reads as U+FFFD: an
// object with a key that holds U+FFFD is walked at each call, not kept.
// An object whose every part is frozen is never checked again.
type Memo struct {
	in      *Intrinsics
	max     int // the JSON's bound (JSON's maxBytes)
	entries int
	byRoot  map[*goja.Object]*memoEntry
}

type memoEntry struct {
	json   json.RawMessage
	nodes  []memoNode
	frozen bool
}

// memoNode is one object or array the walk went through, and what it read of it.
type memoNode struct {
	obj   *goja.Object
	array bool
	keys  []string     // an object's keys in order; an array's indexes
	vals  []goja.Value // the value read of each
}

// NewMemo returns a Memo of at most entries objects whose JSON is bounded by maxBytes; when it
// is full it starts again empty (a script that builds a new object for every call has nothing
// to reuse, and keeps no object alive through the Memo for long).
func (in *Intrinsics) NewMemo(entries, maxBytes int) *Memo {
	if maxBytes <= 0 {
		maxBytes = MaxJSONBytes
	}
	return &Memo{in: in, max: maxBytes, entries: max(entries, 1), byRoot: map[*goja.Object]*memoEntry{}}
}

// JSON is in.JSON(o, DataOnly, maxBytes), reused when o was read before and has not changed.
func (m *Memo) JSON(o *goja.Object) (json.RawMessage, error) {
	if e, ok := m.byRoot[o]; ok {
		if e.frozen || e.holds() {
			return e.json, nil
		}
		delete(m.byRoot, o)
	}
	w := &walker{in: m.in, mode: DataOnly, max: m.max, record: true}
	ok, err := w.value(o, "", 0)
	if err != nil || !ok || !w.record {
		return w.result(ok, err)
	}
	e := &memoEntry{json: json.RawMessage(w.buf.Bytes()), nodes: w.nodes, frozen: true}
	for i := range e.nodes {
		n := &e.nodes[i]
		if slices.Contains(n.vals, nil) || slices.ContainsFunc(n.keys, func(k string) bool { return strings.ContainsRune(k, utf8.RuneError) }) {
			// A hole of an array, which the walk read from Array.prototype (it may change
			// there), or a key HasKeys could not tell from another.
			return e.json, nil
		}
		if e.frozen {
			f, err := m.in.isFrozen(goja.Undefined(), n.obj)
			e.frozen = err == nil && f.ToBoolean()
		}
	}
	if len(m.byRoot) >= m.entries {
		clear(m.byRoot)
	}
	m.byRoot[o] = e
	return e.json, nil
}

// holds reports whether every member the walk read is still there with the value it had.
func (e *memoEntry) holds() bool {
	for i := range e.nodes {
		n := &e.nodes[i]
		if n.array {
			l := n.obj.Get("length")
			if l == nil || l.ToInteger() != int64(len(n.keys)) {
				return false
			}
		} else if !n.obj.HasKeys(n.keys) {
			return false
		}
		for j, k := range n.keys {
			v, accessor, found, err := n.obj.OwnData(k)
			if err != nil || !found || accessor || !sameValue(v, n.vals[j]) {
				return false
			}
		}
	}
	return true
}

// sameValue is SameValue, with an object the same object: false whenever in doubt, which only
// costs a walk.
func sameValue(now, then goja.Value) bool {
	if now == nil {
		now = goja.Undefined()
	}
	if o, ok := then.(*goja.Object); ok {
		n, ok := now.(*goja.Object)
		return ok && n == o
	}
	if _, ok := now.(*goja.Object); ok {
		return false
	}
	return now.SameAs(then)
}
