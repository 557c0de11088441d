package jsutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"

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
	w := &walker{in: in, mode: mode, max: maxBytes, open: map[*goja.Object]bool{}}
	ok, err := w.value(v, "$", "", 0)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, nil
	}
	return json.RawMessage(w.buf.Bytes()), nil
}

type walker struct {
	in   *Intrinsics
	mode Mode
	max  int
	buf  bytes.Buffer
	open map[*goja.Object]bool // the objects being written: a cycle
}

func (w *walker) fail(path, format string, args ...any) error {
	return &JSONError{Path: path, Why: fmt.Sprintf(format, args...)}
}

func (w *walker) room(path string) error {
	if w.buf.Len() > w.max {
		return w.fail(path, "larger than %d bytes", w.max)
	}
	return nil
}

// value writes v; false when v is not serialized (undefined, a function, a symbol).
func (w *walker) value(v goja.Value, path, key string, depth int) (bool, error) {
	if depth > MaxJSONDepth {
		return false, w.fail(path, "nested deeper than %d levels", MaxJSONDepth)
	}
	if o, ok := v.(*goja.Object); ok && w.mode == CallsScript {
		var err error
		if v, err = w.toJSON(o, path, key); err != nil {
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
		return w.primitive(v, path)
	}
	if IsProxy(o) {
		return false, w.fail(path, "a Proxy")
	}
	if _, fn := goja.AssertFunction(o); fn {
		return false, nil
	}
	switch o.ClassName() {
	case "String", "Number", "Boolean", "BigInt":
		// A boxed primitive is written as its value, as JSON.stringify does.
		return w.primitive(w.in.rt.ToValue(o.Export()), path)
	}
	if w.open[o] {
		return false, w.fail(path, "a circular structure: the value contains itself")
	}
	w.open[o] = true
	defer delete(w.open, o)
	if o.ClassName() == "Array" {
		return true, w.array(o, path, depth)
	}
	return true, w.object(o, path, depth)
}

func (w *walker) primitive(v goja.Value, path string) (bool, error) {
	if _, sym := v.(*goja.Symbol); sym {
		return false, nil
	}
	if s, ok := v.(goja.String); ok && s.Length() > w.max {
		return false, w.fail(path, "a string longer than %d", w.max)
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
		return false, w.fail(path, "a BigInt, which JSON cannot hold")
	default:
		return false, nil // a symbol
	}
	return true, w.room(path)
}

func (w *walker) quote(s string) {
	enc := json.NewEncoder(&w.buf)
	enc.SetEscapeHTML(false) // JSON.stringify writes <, > and & as they are
	_ = enc.Encode(s)
	w.buf.Truncate(w.buf.Len() - 1) // Encode's newline
}

func (w *walker) array(o *goja.Object, path string, depth int) error {
	lp, err := w.in.Own(o, "length")
	if err != nil || !lp.Found || lp.Value == nil {
		return w.fail(path, "an array without a length")
	}
	n := lp.Value.ToInteger()
	// Every element takes a byte at least: refuse before walking a huge (or sparse) one.
	if n < 0 || n > int64(w.max-w.buf.Len()) {
		return w.fail(path, "an array of %d elements, larger than %d bytes", n, w.max)
	}
	w.buf.WriteByte('[')
	for i := int64(0); i < n; i++ {
		if i > 0 {
			w.buf.WriteByte(',')
		}
		k := strconv.FormatInt(i, 10)
		p := path + "[" + k + "]"
		ev, err := w.member(o, k, p)
		if err != nil {
			return err
		}
		ok, err := w.value(ev, p, k, depth+1)
		if err != nil {
			return err
		}
		if !ok {
			w.buf.WriteString("null")
		}
		if err := w.room(p); err != nil {
			return err
		}
	}
	w.buf.WriteByte(']')
	return nil
}

func (w *walker) object(o *goja.Object, path string, depth int) error {
	w.buf.WriteByte('{')
	first := true
	for _, k := range o.Keys() {
		p := path + "." + k
		mv, err := w.member(o, k, p)
		if err != nil {
			return err
		}
		mark := w.buf.Len()
		if !first {
			w.buf.WriteByte(',')
		}
		w.quote(k)
		w.buf.WriteByte(':')
		ok, err := w.value(mv, p, k, depth+1)
		if err != nil {
			return err
		}
		if !ok {
			w.buf.Truncate(mark) // JSON.stringify leaves such a member out
			continue
		}
		first = false
		if err := w.room(p); err != nil {
			return err
		}
	}
	w.buf.WriteByte('}')
	return nil
}

// member reads o[k]: an own data property as it is; a getter is called once in CallsScript
// mode and refused in DataOnly mode.
func (w *walker) member(o *goja.Object, k, path string) (goja.Value, error) {
	p, err := w.in.Own(o, k)
	if err != nil {
		return nil, w.fail(path, "%v", err)
	}
	if !p.Accessor {
		return p.Value, nil
	}
	if w.mode == DataOnly {
		return nil, w.fail(path, "a getter, which crw does not call: give the value itself")
	}
	get, ok := goja.AssertFunction(p.Getter)
	if !ok {
		return goja.Undefined(), nil
	}
	v, err := get(o)
	if err != nil {
		return nil, w.scriptFailed(path, "its getter", err)
	}
	return v, nil
}

// toJSON applies the value's toJSON method, as JSON.stringify does.
func (w *walker) toJSON(o *goja.Object, path, key string) (goja.Value, error) {
	if IsProxy(o) {
		return nil, w.fail(path, "a Proxy")
	}
	p, err := w.in.Data(o, "toJSON")
	if err != nil {
		return nil, w.fail(path, "%v", err)
	}
	fnv := p.Value
	if p.Accessor {
		get, ok := goja.AssertFunction(p.Getter)
		if !ok {
			return o, nil
		}
		if fnv, err = get(o); err != nil {
			return nil, w.scriptFailed(path, "its toJSON getter", err)
		}
	}
	fn, ok := goja.AssertFunction(fnv)
	if !ok {
		return o, nil
	}
	v, err := fn(o, w.in.rt.ToValue(key))
	if err != nil {
		return nil, w.scriptFailed(path, "its toJSON", err)
	}
	return v, nil
}

// scriptFailed is a getter or toJSON that threw, or the run was interrupted while it ran: an
// interrupt stays an interrupt.
func (w *walker) scriptFailed(path, what string, err error) error {
	if ex, ok := err.(*goja.Exception); ok {
		return w.fail(path, "%s threw: %s", what, w.in.Thrown(ex.Value()).Message)
	}
	return err
}
