package jsutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// Mode says what JSON may run of a script value while it serializes it.
type Mode int

const (
	// DataOnly runs no script code: an own getter is refused, toJSON is not called. For what crw
	// reads of a script (agent.call options, log arguments, thrown values).
	DataOnly Mode = iota
	// CallsScript follows JSON.stringify: each own enumerable getter is called once and toJSON is
	// honoured. For the workflow's result, which is the script's own to shape.
	CallsScript
)

// Limits of what JSON serializes.
const (
	MaxJSONDepth = 512      // the depth the result builder reads too (FrozenParser)
	MaxJSONBytes = 64 << 20 // a result larger than this is not data a run should journal
)

// JSONError says where a value cannot be serialized, as a path from its root ($.a[2].b).
type JSONError struct {
	Path string
	Why  string
}

func (e *JSONError) Error() string { return e.Path + ": " + e.Why }

// JSON serializes a script value with JSON.stringify's rules, walked in Go: own enumerable
// string-keyed properties in their order, array holes and functions in arrays as null, members
// that are undefined, functions or symbols left out, non-finite numbers as null. It never uses a
// global the script can replace, refuses a Proxy, a BigInt, a cycle, data nested deeper than
// MaxJSONDepth or larger than maxBytes (0: MaxJSONBytes), and names where. It returns nil for a
// value JSON.stringify makes undefined.
func (in *Intrinsics) JSON(v goja.Value, mode Mode, maxBytes int) (json.RawMessage, error) {
	if maxBytes <= 0 {
		maxBytes = MaxJSONBytes
	}
	w := &walker{in: in, mode: mode, max: maxBytes}
	return w.result(w.value(v, "", 0))
}

// result is what was written, given what value returned.
func (w *walker) result(ok bool, err error) (json.RawMessage, error) {
	if err != nil || !ok {
		return nil, err
	}
	return json.RawMessage(w.buf.Bytes()), nil
}

type walker struct {
	in   *Intrinsics
	mode Mode
	max  int
	buf  bytes.Buffer
	open []*goja.Object // the objects being written, outermost first: a cycle
	// at is where the walk is: the member names and array indexes from the root, of which a
	// failure's path is made (only then: most walks never fail).
	at []pathStep
	// record: keep in nodes what is read of each object and array (Memo).
	record bool
	nodes  []memoNode
	kept   int // the members in nodes
}

// maxMemoMembers bounds what a walk keeps for a Memo: a larger value is walked every time.
const maxMemoMembers = 4096

// keep records that member k of nodes[node] was read as v.
func (w *walker) keep(node int, k string, v goja.Value) {
	if !w.record || node < 0 {
		return
	}
	if w.kept++; w.kept > maxMemoMembers {
		w.record, w.nodes = false, nil
		return
	}
	n := &w.nodes[node]
	if n.array {
		n.keys = append(n.keys, k)
	}
	n.vals = append(n.vals, v)
}

// pathStep is one step of a path: a member's name or an array's index.
type pathStep struct {
	key   string
	index bool
}

func (w *walker) path() string {
	var b strings.Builder
	b.WriteByte('$')
	for _, s := range w.at {
		if s.index {
			b.WriteString("[" + s.key + "]")
		} else {
			b.WriteString("." + s.key)
		}
	}
	return b.String()
}

func (w *walker) fail(format string, args ...any) error {
	return &JSONError{Path: w.path(), Why: fmt.Sprintf(format, args...)}
}

func (w *walker) room() error {
	if w.buf.Len() > w.max {
		return w.fail("larger than %d bytes", w.max)
	}
	return nil
}

// value writes v; false when v is not serialized (undefined, a function, a symbol). key is its
// member name or index, which toJSON is given.
func (w *walker) value(v goja.Value, key string, depth int) (bool, error) {
	if depth > MaxJSONDepth {
		return false, w.fail("nested deeper than %d levels", MaxJSONDepth)
	}
	if o, ok := v.(*goja.Object); ok && w.mode == CallsScript {
		var err error
		if v, err = w.toJSON(o, key); err != nil {
			return false, err
		}
	}
	switch {
	case v == nil || goja.IsUndefined(v):
		return false, nil
	case goja.IsNull(v):
		w.buf.WriteString("null")
		return true, nil
	}
	o, ok := v.(*goja.Object)
	if !ok {
		return w.primitive(v)
	}
	if IsProxy(o) {
		return false, w.fail("a Proxy")
	}
	if _, fn := goja.AssertFunction(o); fn {
		return false, nil
	}
	class := o.ClassName()
	switch class {
	case "String":
		// A boxed primitive is written as its value, as JSON.stringify does (read as it is
		// held: a toString or valueOf of the script's is not called).
		s, err := w.in.strValueOf(o)
		if err != nil {
			return false, w.fail("%v", err)
		}
		return w.primitive(s)
	case "Number", "Boolean":
		return w.primitive(w.in.rt.ToValue(o.Export()))
	}
	if slices.Contains(w.open, o) {
		return false, w.fail("a circular structure: the value contains itself")
	}
	w.open = append(w.open, o)
	defer func() { w.open = w.open[:len(w.open)-1] }()
	if class == "Array" {
		return true, w.array(o, depth)
	}
	return true, w.object(o, depth)
}

func (w *walker) primitive(v goja.Value) (bool, error) {
	switch x := v.(type) {
	case *goja.Symbol:
		return false, nil
	case goja.String:
		if x.Length() > w.max {
			return false, w.fail("a string longer than %d", w.max)
		}
		text := x.String()
		if problem := SurrogateProblem(x, text); problem != "" {
			return false, w.fail("a string that %s", problem)
		}
		w.quote(text)
		return true, w.room()
	}
	switch x := v.Export().(type) {
	case bool:
		w.buf.WriteString(strconv.FormatBool(x))
	case int64:
		w.buf.WriteString(strconv.FormatInt(x, 10))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			w.buf.WriteString("null")
		} else {
			w.buf.WriteString(v.String()) // JS number formatting, which JSON shares
		}
	case string:
		w.quote(x)
	case *big.Int:
		return false, w.fail("a BigInt, which JSON cannot hold")
	default:
		return false, nil // a symbol
	}
	return true, w.room()
}

// quote writes s as a JSON string, as JSON.stringify does: <, > and & as they are.
func (w *walker) quote(s string) {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		w.buf.WriteByte('"')
		w.buf.WriteString(s)
		w.buf.WriteByte('"')
		return
	}
	enc := json.NewEncoder(&w.buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	w.buf.Truncate(w.buf.Len() - 1) // Encode's newline
}

func (w *walker) array(o *goja.Object, depth int) error {
	lp, err := w.in.Own(o, "length")
	if err != nil || !lp.Found || lp.Value == nil {
		return w.fail("an array without a length")
	}
	n := lp.Value.ToInteger()
	// Every element takes a byte at least: refuse before walking a huge (or sparse) one.
	if n < 0 || n > int64(w.max-w.buf.Len()) {
		return w.fail("an array of %d elements, larger than %d bytes", n, w.max)
	}
	node := -1
	if w.record {
		node = len(w.nodes)
		w.nodes = append(w.nodes, memoNode{obj: o, array: true})
	}
	w.buf.WriteByte('[')
	for i := int64(0); i < n; i++ {
		if i > 0 {
			w.buf.WriteByte(',')
		}
		k := strconv.FormatInt(i, 10)
		w.at = append(w.at, pathStep{key: k, index: true})
		ev, err := w.member(o, k)
		if err != nil {
			return err
		}
		w.keep(node, k, ev)
		ok, err := w.value(ev, k, depth+1)
		if err != nil {
			return err
		}
		if !ok {
			w.buf.WriteString("null")
		}
		if err := w.room(); err != nil {
			return err
		}
		w.at = w.at[:len(w.at)-1]
	}
	w.buf.WriteByte(']')
	return nil
}

func (w *walker) object(o *goja.Object, depth int) error {
	// A typed array is an object of its indexes, which Keys would make a string of each (~40
	// bytes for each byte of a Uint8Array) before any bound was met: refuse one whose members
	// could not fit ("0":0, is 6 bytes at the least) from its length.
	if n, ok := typedLength(o); ok && n > (w.max-w.buf.Len())/minIndexMember {
		return w.fail("a typed array of %d elements, larger than %d bytes", n, w.max)
	}
	w.buf.WriteByte('{')
	first := true
	keys := o.Keys()
	node := -1
	if w.record {
		node = len(w.nodes)
		w.nodes = append(w.nodes, memoNode{obj: o, keys: keys, vals: make([]goja.Value, 0, len(keys))})
	}
	var replaced map[string]bool // the keys holding U+FFFD met so far
	for _, k := range keys {
		w.at = append(w.at, pathStep{key: k})
		if strings.ContainsRune(k, utf8.RuneError) {
			// A key's Go text holds U+FFFD in place of a lone surrogate: such a key is not
			// found under that text, or is another key's name twice.
			if p, err := w.in.Own(o, k); err == nil && (!p.Found || replaced[k]) {
				return w.fail("a key that holds a lone UTF-16 surrogate (it would read as U+FFFD)")
			}
			if replaced == nil {
				replaced = map[string]bool{}
			}
			replaced[k] = true
		}
		mv, err := w.member(o, k)
		if err != nil {
			return err
		}
		w.keep(node, k, mv)
		mark := w.buf.Len()
		if !first {
			w.buf.WriteByte(',')
		}
		w.quote(k)
		w.buf.WriteByte(':')
		ok, err := w.value(mv, k, depth+1)
		if err != nil {
			return err
		}
		if !ok {
			w.buf.Truncate(mark) // JSON.stringify leaves such a member out
			w.at = w.at[:len(w.at)-1]
			continue
		}
		first = false
		if err := w.room(); err != nil {
			return err
		}
		w.at = w.at[:len(w.at)-1]
	}
	w.buf.WriteByte('}')
	return nil
}

// member reads o[k]: an own data property as it is; a getter is called once in CallsScript
// mode and refused in DataOnly mode.
func (w *walker) member(o *goja.Object, k string) (goja.Value, error) {
	p, err := w.in.Own(o, k)
	if err != nil {
		return nil, w.fail("%v", err)
	}
	if !p.Accessor {
		return p.Value, nil
	}
	if w.mode == DataOnly {
		return nil, w.fail("a getter, which crw does not call: give the value itself")
	}
	get, ok := goja.AssertFunction(p.Getter)
	if !ok {
		return goja.Undefined(), nil
	}
	v, err := get(o)
	if err != nil {
		return nil, w.scriptFailed("its getter", err)
	}
	return v, nil
}

// toJSON applies the value's toJSON method, as JSON.stringify does.
func (w *walker) toJSON(o *goja.Object, key string) (goja.Value, error) {
	if IsProxy(o) {
		return nil, w.fail("a Proxy")
	}
	p, err := w.in.Data(o, "toJSON")
	if err != nil {
		return nil, w.fail("%v", err)
	}
	fnv := p.Value
	if p.Accessor {
		get, ok := goja.AssertFunction(p.Getter)
		if !ok {
			return o, nil
		}
		if fnv, err = get(o); err != nil {
			return nil, w.scriptFailed("its toJSON getter", err)
		}
	}
	fn, ok := goja.AssertFunction(fnv)
	if !ok {
		return o, nil
	}
	v, err := fn(o, w.in.rt.ToValue(key))
	if err != nil {
		return nil, w.scriptFailed("its toJSON", err)
	}
	return v, nil
}

// scriptFailed is a getter or toJSON that threw, or the run was interrupted while it ran: an
// interrupt stays an interrupt.
func (w *walker) scriptFailed(what string, err error) error {
	if ex, ok := err.(*goja.Exception); ok {
		return w.fail("%s threw: %s", what, w.in.Thrown(ex.Value()).Message)
	}
	return err
}

// minIndexMember is the fewest bytes an index member of an object takes in JSON: "0":0 and a
// comma.
const minIndexMember = 6

// typedLength is the length of o when it is a typed array (its Go view of its elements, read
// without running script code: no copy is made), false for any other object.
func typedLength(o *goja.Object) (int, bool) {
	t := o.ExportType()
	if t == nil || t.Kind() != reflect.Slice {
		return 0, false
	}
	switch t.Elem().Kind() {
	case reflect.Int8, reflect.Uint8, reflect.Int16, reflect.Uint16, reflect.Int32, reflect.Uint32,
		reflect.Int64, reflect.Uint64, reflect.Float32, reflect.Float64:
		return reflect.ValueOf(o.Export()).Len(), true
	}
	return 0, false
}
