package jsutil

import (
	"encoding/json"
	"slices"

	"github.com/dop251/goja"
)

// A Memo keeps the JSON of objects it serialized (DataOnly) with what the walk read of each:
// every object's own enumerable keys and every member's value. An object given again is
// checked by reading its keys (HasKeys, which makes none) and those members with plain gets,
// and its JSON is reused when all are as they were: the walk reads each member as an own data
// property and writes the JSON, the check only compares. A workflow passes the same few schema
// objects to thousands of calls.
//
// The check reads what the walk read, so a member that is still a data property holding the
// same value (the same object, for an object) gives the same JSON. A member a script turned
// into an accessor after the first read would have its getter called by the check: the walk
// refuses getters, the check cannot tell one from a value without the descriptor it spares
// (agent.call refuses a call such a getter makes while its options are read).
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
		if slices.Contains(n.vals, nil) {
			// A hole of an array: a plain get of it reads Array.prototype, which the walk did
			// not, so nothing could check it.
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
			if !sameValue(n.obj.Get(k), n.vals[j]) {
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
