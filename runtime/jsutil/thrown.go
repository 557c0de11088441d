package jsutil

import (
	"fmt"
	"strings"

	"github.com/dop251/goja"
)

// MaxThrownText bounds each text read from a thrown value (its message, code, reason); a stack
// is bounded to MaxThrownStack.
const (
	MaxThrownText  = 4 << 10
	MaxThrownStack = 16 << 10
)

// Thrown is what can safely be said of a thrown value.
type Thrown struct {
	Message string // "Name: message" for an Error ("Error: " left out), else "threw <the value>"
	String  string // as String(value) would print an Error, "Error: " kept; else Message
	Code    string // its code property, when it is a string
	Reason  string // its reason property, when it is a string
	Stack   string // its stack property as goja wrote it, when it is a string
}

// Thrown describes a value a script threw or rejected with, running none of its code: only
// data properties are read (a getter, a toString or a Proxy trap is never called), and each
// text is bounded. It never panics.
func (in *Intrinsics) Thrown(v goja.Value) Thrown {
	t := in.thrown(v)
	if t.String == "" {
		t.String = t.Message
	}
	return t
}

func (in *Intrinsics) thrown(v goja.Value) Thrown {
	var t Thrown
	o, ok := v.(*goja.Object)
	if !ok {
		t.Message = describePrimitive(v)
		return t
	}
	if IsProxy(o) {
		t.Message = "threw a Proxy"
		return t
	}
	if _, fn := goja.AssertFunction(o); fn {
		t.Message = "threw a function"
		return t
	}
	msg, err := in.Data(o, "message")
	switch {
	case err != nil:
		t.Message = "threw an object whose prototype is a Proxy"
		return t
	case msg.Accessor:
		t.Message = "threw an object whose message is a getter (not called)"
	case msg.Found && msg.Value != nil && !goja.IsUndefined(msg.Value):
		t.Message = in.text(msg.Value)
		t.String = t.Message
		if name, _ := in.Data(o, "name"); name.Found && name.Value != nil && !name.Accessor {
			if n := in.text(name.Value); n != "" {
				t.String = n + ": " + t.Message
				if n != "Error" {
					t.Message = t.String
				}
			}
		}
	default:
		if b, err := in.JSON(o, DataOnly, MaxThrownText); err == nil && b != nil {
			t.Message = "threw " + string(b)
		} else {
			t.Message = "threw an object that cannot be shown"
			if err != nil {
				t.Message += " (" + err.Error() + ")"
			}
		}
		return t // not an Error: its code is data, not a code crw reports
	}
	if t.String == "" {
		t.String = t.Message
	}
	t.Code = in.stringProp(o, "code", MaxThrownText)
	t.Reason = in.stringProp(o, "reason", MaxThrownText)
	t.Stack = in.stringProp(o, "stack", MaxThrownStack)
	return t
}

// stringProp is a string data property of o (own or inherited), bounded; "" otherwise.
func (in *Intrinsics) stringProp(o *goja.Object, name string, limit int) string {
	p, err := in.Data(o, name)
	if err != nil || !p.Found || p.Accessor || p.Value == nil {
		return ""
	}
	if _, sym := p.Value.(*goja.Symbol); sym {
		return ""
	}
	if s, ok := p.Value.(goja.String); ok {
		return bounded(s, limit)
	}
	if _, obj := p.Value.(*goja.Object); obj || goja.IsUndefined(p.Value) || goja.IsNull(p.Value) {
		return ""
	}
	return describeValue(p.Value)
}

// text is a message or name as a person reads it: a string as it is, another primitive as JS
// prints it, an object by its kind.
func (in *Intrinsics) text(v goja.Value) string {
	if _, sym := v.(*goja.Symbol); sym {
		return "a symbol"
	}
	if s, ok := v.(goja.String); ok {
		return bounded(s, MaxThrownText)
	}
	if o, ok := v.(*goja.Object); ok {
		if IsProxy(o) {
			return "(a Proxy)"
		}
		return "(" + TypeName(o) + ")"
	}
	return describeValue(v)
}

func describePrimitive(v goja.Value) string {
	switch {
	case v == nil || goja.IsUndefined(v):
		return "undefined"
	case goja.IsNull(v):
		return "threw null"
	}
	if _, sym := v.(*goja.Symbol); sym {
		return "threw a symbol"
	}
	if s, ok := v.(goja.String); ok {
		return "threw " + quoteJS(bounded(s, MaxThrownText))
	}
	return "threw " + describeValue(v)
}

// PrimitiveText prints a primitive as JS prints it, a symbol as "a symbol"; it runs no script
// code.
func PrimitiveText(v goja.Value) string {
	if v == nil {
		return "undefined"
	}
	if _, sym := v.(*goja.Symbol); sym {
		return "a symbol"
	}
	if s, ok := v.(goja.String); ok {
		return bounded(s, MaxThrownText)
	}
	return describeValue(v)
}

// describeValue prints a primitive that is not a string; it runs no script code.
func describeValue(v goja.Value) string {
	if _, sym := v.(*goja.Symbol); sym {
		return "a symbol"
	}
	switch TypeName(v) {
	case "bigint":
		return v.String() + "n"
	}
	return v.String()
}

// bounded is s cut to about limit bytes, saying how much was cut.
func bounded(s goja.String, limit int) string {
	n := s.Length()
	if n <= limit {
		return s.String()
	}
	cut := s.Substring(0, limit).String()
	return fmt.Sprintf("%s… (%d more characters cut)", strings.ToValidUTF8(cut, "�"), n-limit)
}

func quoteJS(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
