package jsutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/dop251/goja"
)

// FrozenParser returns a parser of JSON into deeply frozen JS values. It builds every object
// with non-writable, non-configurable properties and then freezes it, which is several times
// cheaper than JSON.parse followed by a freezing walk: a call's output is parsed once per call.
// The values are what JSON.parse would give: same keys in the same order, same numbers.
//
// It freezes with the intrinsics in took before the script ran.
func FrozenParser(in *Intrinsics) func(data []byte) (goja.Value, error) {
	rt, seal := in.rt, in.preventEx
	return func(data []byte) (goja.Value, error) {
		p := &frozenParser{rt: rt, preventExtensions: seal, data: data}
		p.space()
		if p.i >= len(p.data) {
			return goja.Null(), nil
		}
		v, err := p.value(0)
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i != len(p.data) {
			return nil, p.errorf("text after the JSON value")
		}
		return v, nil
	}
}

// maxFrozenDepth bounds recursion on hostile input: the arrays and objects a value may nest.
// It is engine/result.MaxOutputDepth, which replay.Read holds every output it delivers to, so
// every output crw journals can be given to a script; answers are held to fewer levels
// (schema.MaxDataDepth).
const maxFrozenDepth = 512

type frozenParser struct {
	rt                *goja.Runtime
	preventExtensions goja.Callable
	data              []byte
	i                 int
}

func (p *frozenParser) errorf(format string, args ...any) error {
	return fmt.Errorf("json at offset %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *frozenParser) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value reads the value at p.i; depth is how many arrays and objects hold it.
func (p *frozenParser) value(depth int) (goja.Value, error) {
	if p.i >= len(p.data) {
		return nil, p.errorf("unexpected end")
	}
	switch c := p.data[p.i]; {
	case (c == '{' || c == '[') && depth >= maxFrozenDepth:
		return nil, p.errorf("nested too deeply")
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return p.rt.ToValue(s), nil
	case c == 't':
		return p.literal("true", p.rt.ToValue(true))
	case c == 'f':
		return p.literal("false", p.rt.ToValue(false))
	case c == 'n':
		return p.literal("null", goja.Null())
	default:
		return p.number()
	}
}

func (p *frozenParser) literal(word string, v goja.Value) (goja.Value, error) {
	if len(p.data)-p.i < len(word) || string(p.data[p.i:p.i+len(word)]) != word {
		return nil, p.errorf("invalid literal")
	}
	p.i += len(word)
	return v, nil
}

func (p *frozenParser) number() (goja.Value, error) {
	start := p.i
	for p.i < len(p.data) {
		c := p.data[p.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.i++
			continue
		}
		break
	}
	text := string(p.data[start:p.i])
	if text == "" {
		return nil, p.errorf("unexpected character %q", p.data[start])
	}
	if n, err := strconv.ParseInt(text, 10, 64); err == nil && n > -1<<53 && n < 1<<53 && text != "-0" {
		return p.rt.ToValue(n), nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, p.errorf("invalid number %q", text)
	}
	// Beyond float64's range, JSON.parse gives ±Infinity (2e309), as ParseFloat does.
	return p.rt.ToValue(f), nil
}

func (p *frozenParser) str() (string, error) {
	start := p.i + 1
	escaped := false
	for j := start; j < len(p.data); j++ {
		switch p.data[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			p.i = j + 1
			if !escaped {
				return string(p.data[start:j]), nil
			}
			var s string
			if err := json.Unmarshal(p.data[start-1:j+1], &s); err != nil {
				return "", p.errorf("invalid string: %v", err)
			}
			return s, nil
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *frozenParser) object(depth int) (goja.Value, error) {
	start := p.i
	p.i++ // {
	obj := p.rt.NewObject()
	p.space()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return p.sealed(obj)
	}
	for {
		key, err := p.memberName()
		if err != nil {
			return nil, err
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if obj.DefineDataProperty(key, v, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE) != nil {
			// The name came before (RFC 8259 leaves a repeated name's meaning open), and a
			// frozen member cannot be defined again: build this object again the slow way,
			// where the last value wins, as JSON.parse has it.
			p.i = start
			return p.objectWithRepeats(depth)
		}
		end, err := p.memberEnd()
		if err != nil {
			return nil, err
		}
		if end {
			return p.sealed(obj)
		}
	}
}

func (p *frozenParser) array(depth int) (goja.Value, error) {
	p.i++ // [
	arr := p.rt.NewArray()
	p.space()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return p.frozenArray(arr, 0)
	}
	for n := 0; ; n++ {
		p.space()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		// Each element defined frozen as it comes: Object.freeze's walk of the finished
		// array costs twice the time and allocations.
		if err := arr.DefineDataProperty(strconv.Itoa(n), v, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE); err != nil {
			return nil, p.errorf("element %d: %v", n, err)
		}
		p.space()
		if p.i < len(p.data) && p.data[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.data) && p.data[p.i] == ']' {
			p.i++
			return p.frozenArray(arr, n+1)
		}
		return nil, p.errorf("expected ',' or ']'")
	}
}

// frozenArray finishes an array of n elements, each defined non-writable and non-configurable:
// its length made non-writable and extensions prevented, it is frozen.
func (p *frozenParser) frozenArray(arr *goja.Object, n int) (goja.Value, error) {
	if err := arr.DefineDataProperty("length", p.rt.ToValue(n), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE); err != nil {
		return nil, err
	}
	return p.sealed(arr)
}

// sealed finishes an object whose properties were all defined non-writable and
// non-configurable: preventing extensions is all that freezing it still takes, without
// visiting its properties again.
func (p *frozenParser) sealed(obj *goja.Object) (goja.Value, error) {
	if _, err := p.preventExtensions(goja.Undefined(), obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// objectWithRepeats builds an object some of whose member names repeat: each name stands
// where it first appears, with the value it last has.
func (p *frozenParser) objectWithRepeats(depth int) (goja.Value, error) {
	p.i++ // {
	var names []string
	var values []goja.Value
	at := map[string]int{}
	for {
		key, err := p.memberName()
		if err != nil {
			return nil, err
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if i, ok := at[key]; ok {
			values[i] = v
		} else {
			at[key] = len(names)
			names, values = append(names, key), append(values, v)
		}
		end, err := p.memberEnd()
		if err != nil {
			return nil, err
		}
		if end {
			break
		}
	}
	obj := p.rt.NewObject()
	for i, key := range names {
		if err := obj.DefineDataProperty(key, values[i], goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE); err != nil {
			return nil, p.errorf("member %q: %v", key, err)
		}
	}
	return p.sealed(obj)
}

// memberName reads an object member's name and the colon after it, and the space around them.
func (p *frozenParser) memberName() (string, error) {
	p.space()
	if p.i >= len(p.data) || p.data[p.i] != '"' {
		return "", p.errorf("expected a member name")
	}
	key, err := p.str()
	if err != nil {
		return "", err
	}
	p.space()
	if p.i >= len(p.data) || p.data[p.i] != ':' {
		return "", p.errorf("expected ':'")
	}
	p.i++
	p.space()
	return key, nil
}

// memberEnd reads what follows an object's member: true at the closing brace, false at a comma.
func (p *frozenParser) memberEnd() (bool, error) {
	p.space()
	if p.i < len(p.data) && p.data[p.i] == ',' {
		p.i++
		return false, nil
	}
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return true, nil
	}
	return false, p.errorf("expected ',' or '}'")
}
