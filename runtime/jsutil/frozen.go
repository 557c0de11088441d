package jsutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/dop251/goja"
)

// FrozenParser returns a parser of JSON into deeply frozen JS values. It builds every object
// with non-writable, non-configurable properties and then freezes it, which is several times
// cheaper than JSON.parse followed by a freezing walk: a CallResult is parsed once per call.
// The values are what JSON.parse would give: same keys in the same order, same numbers.
//
// Members of the top-level object named in lazy are built on first read: each is a
// non-configurable getter that parses its value (deeply frozen) once. A result's meta is seldom
// read, and building it is most of the work of a replayed call.
//
// It freezes with the intrinsics in took before the script ran.
func FrozenParser(in *Intrinsics, lazy ...string) func(data []byte) (goja.Value, error) {
	rt, freeze, seal := in.rt, in.freeze, in.preventEx
	return func(data []byte) (goja.Value, error) {
		p := &frozenParser{rt: rt, freeze: freeze, preventExtensions: seal, data: data, lazy: lazy}
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

// maxFrozenDepth bounds recursion on hostile input. It is engine/result.MaxOutputDepth: a
// CallResult's output may nest that deeply inside the result's own object (answers are held
// to fewer levels, schema.MaxDataDepth), and a journal row beyond it is refused as damaged
// before any result is built.
const maxFrozenDepth = 512

type frozenParser struct {
	rt                *goja.Runtime
	freeze            goja.Callable
	preventExtensions goja.Callable
	data              []byte
	i                 int
	lazy              []string
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

func (p *frozenParser) value(depth int) (goja.Value, error) {
	if depth > maxFrozenDepth {
		return nil, p.errorf("nested too deeply")
	}
	if p.i >= len(p.data) {
		return nil, p.errorf("unexpected end")
	}
	switch c := p.data[p.i]; {
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
		var defined error
		if depth == 0 && slices.Contains(p.lazy, key) {
			getter, err := p.lazyGetter()
			if err != nil {
				return nil, err
			}
			defined = obj.DefineAccessorProperty(key, getter, nil, goja.FLAG_FALSE, goja.FLAG_TRUE)
		} else {
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			defined = obj.DefineDataProperty(key, v, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
		}
		if defined != nil {
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
	var items []any
	p.space()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return p.frozen(p.rt.NewArray())
	}
	for {
		p.space()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		p.space()
		if p.i < len(p.data) && p.data[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.data) && p.data[p.i] == ']' {
			p.i++
			return p.frozen(p.rt.NewArray(items...))
		}
		return nil, p.errorf("expected ',' or ']'")
	}
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

func (p *frozenParser) frozen(obj *goja.Object) (goja.Value, error) {
	if _, err := p.freeze(goja.Undefined(), obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// lazyGetter moves past a member's value and returns a getter that builds it on first read.
func (p *frozenParser) lazyGetter() (goja.Value, error) {
	start := p.i
	if err := p.skip(1); err != nil {
		return nil, err
	}
	raw := p.data[start:p.i]
	var built goja.Value
	rt, freeze, seal := p.rt, p.freeze, p.preventExtensions
	return rt.ToValue(func(goja.FunctionCall) goja.Value {
		if built == nil {
			sub := &frozenParser{rt: rt, freeze: freeze, preventExtensions: seal, data: raw}
			v, err := sub.value(1)
			if err != nil {
				panic(rt.NewGoError(err))
			}
			built = v
		}
		return built
	}), nil
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
		var v goja.Value
		if depth == 0 && slices.Contains(p.lazy, key) {
			v, err = p.lazyGetter()
		} else {
			v, err = p.value(depth + 1)
		}
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
		var err error
		if depth == 0 && slices.Contains(p.lazy, key) {
			err = obj.DefineAccessorProperty(key, values[i], nil, goja.FLAG_FALSE, goja.FLAG_TRUE)
		} else {
			err = obj.DefineDataProperty(key, values[i], goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
		}
		if err != nil {
			return nil, p.errorf("member %q: %v", key, err)
		}
	}
	return p.sealed(obj)
}

// skip moves past one JSON value without building it.
func (p *frozenParser) skip(depth int) error {
	if depth > maxFrozenDepth {
		return p.errorf("nested too deeply")
	}
	p.space()
	if p.i >= len(p.data) {
		return p.errorf("unexpected end")
	}
	switch p.data[p.i] {
	case '"':
		_, err := p.str()
		return err
	case '{', '[':
		closer := byte('}')
		if p.data[p.i] == '[' {
			closer = ']'
		}
		p.i++
		p.space()
		if p.i < len(p.data) && p.data[p.i] == closer {
			p.i++
			return nil
		}
		for {
			if closer == '}' {
				p.space()
				if _, err := p.str(); err != nil {
					return err
				}
				p.space()
				if p.i >= len(p.data) || p.data[p.i] != ':' {
					return p.errorf("expected ':'")
				}
				p.i++
			}
			if err := p.skip(depth + 1); err != nil {
				return err
			}
			p.space()
			if p.i < len(p.data) && p.data[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.data) && p.data[p.i] == closer {
				p.i++
				return nil
			}
			return p.errorf("expected ',' or %q", closer)
		}
	default:
		_, err := p.value(depth)
		return err
	}
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
