package jsutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// FrozenParser returns a parser of JSON into deeply frozen JS values. It makes every object and
// array frozen at once (goja.Runtime.NewFrozenObject, NewFrozenArray), which is several times
// cheaper than JSON.parse followed by a freezing walk: a call's output is parsed once per call.
// The values are what JSON.parse would give: same keys in the same order, same numbers, and the
// prototypes of the runtime's own intrinsics, whatever the script did to the globals.
func FrozenParser(in *Intrinsics) func(data []byte) (goja.Value, error) {
	rt := in.rt
	// The members and elements read so far of the objects and arrays being read, kept from
	// one parse to the next (up to keptMembers of them).
	var names []string
	var values []goja.Value
	// The member names read before, each kept once: every call's output has the same few.
	known := map[string]string{}
	return func(data []byte) (goja.Value, error) {
		p := &frozenParser{rt: rt, data: data, names: names[:0], values: values[:0], known: known}
		defer func() {
			// No name or value outlives its parse here.
			clear(p.names[:cap(p.names)])
			clear(p.values[:cap(p.values)])
			names, values = nil, nil
			if cap(p.names) <= keptMembers && cap(p.values) <= keptMembers {
				names, values = p.names[:0], p.values[:0]
			}
		}()
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

// keptMembers bounds the members and elements a FrozenParser keeps room for from one parse to
// the next: an output's few, not the most one ever had.
const keptMembers = 1024

type frozenParser struct {
	rt   *goja.Runtime
	data []byte
	i    int
	// The members (names and values) and elements (values) of the objects and arrays under
	// way, innermost last: each takes its own off the end when it is made.
	names  []string
	values []goja.Value
	known  map[string]string // member names read before (at most keptNames)
}

// keptNames and keptNameBytes bound the member names a FrozenParser keeps from one parse to
// the next: the few that outputs of a schema repeat, not every name a long run's outputs ever
// had, nor a long one.
const (
	keptNames     = 1024
	keptNameBytes = 64
)

// name is the member name whose text, without escapes, is b: the one kept string of it.
func (p *frozenParser) name(b []byte) string {
	if s, ok := p.known[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(s) > keptNameBytes {
		return s
	}
	if len(p.known) >= keptNames {
		clear(p.known)
	}
	p.known[s] = s
	return s
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

// memberText reads a member name's string: a name read before is its kept string (name),
// one with escapes is read as str reads it.
func (p *frozenParser) memberText() (string, error) {
	start := p.i + 1
	for j := start; j < len(p.data); j++ {
		switch p.data[j] {
		case '\\':
			return p.str()
		case '"':
			p.i = j + 1
			return p.name(p.data[start:j]), nil
		}
	}
	return p.str() // unterminated: its error
}

func (p *frozenParser) object(depth int) (goja.Value, error) {
	p.i++ // {
	p.space()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return p.rt.NewFrozenObject(nil, nil), nil
	}
	mark, valueMark := len(p.names), len(p.values)
	for {
		key, err := p.memberName()
		if err != nil {
			return nil, err
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		p.names, p.values = append(p.names, key), append(p.values, v)
		end, err := p.memberEnd()
		if err != nil {
			return nil, err
		}
		if end {
			break
		}
	}
	names, values := p.names[mark:], p.values[valueMark:]
	defer func() { p.names, p.values = p.names[:mark], p.values[:valueMark] }()
	if repeats(names) {
		names, values = lastWins(names, values)
	}
	return p.rt.NewFrozenObject(names, values), nil
}

// lastWins is the members of an object some of whose names repeat, as JSON.parse has them
// (RFC 8259 leaves a repeated name's meaning open): each name where it first appears, with the
// value it last has.
func lastWins(names []string, values []goja.Value) ([]string, []goja.Value) {
	at := make(map[string]int, len(names))
	var outNames []string
	var outValues []goja.Value
	for i, name := range names {
		if j, ok := at[name]; ok {
			outValues[j] = values[i]
			continue
		}
		at[name] = len(outNames)
		outNames, outValues = append(outNames, name), append(outValues, values[i])
	}
	return outNames, outValues
}

// repeats reports whether a name occurs twice in names.
func repeats(names []string) bool {
	if len(names) <= 16 {
		for i, name := range names {
			for _, other := range names[:i] {
				if name == other {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[string]struct{}, len(names))
	for _, name := range names {
		if _, ok := seen[name]; ok {
			return true
		}
		seen[name] = struct{}{}
	}
	return false
}

func (p *frozenParser) array(depth int) (goja.Value, error) {
	p.i++ // [
	p.space()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return p.rt.NewFrozenArray(nil), nil
	}
	mark := len(p.values)
	for {
		p.space()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		p.values = append(p.values, v)
		p.space()
		if p.i < len(p.data) && p.data[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.data) && p.data[p.i] == ']' {
			p.i++
			arr := p.rt.NewFrozenArray(p.values[mark:])
			p.values = p.values[:mark]
			return arr, nil
		}
		return nil, p.errorf("expected ',' or ']'")
	}
}

// memberName reads an object member's name and the colon after it, and the space around them.
func (p *frozenParser) memberName() (string, error) {
	p.space()
	if p.i >= len(p.data) || p.data[p.i] != '"' {
		return "", p.errorf("expected a member name")
	}
	key, err := p.memberText()
	if err != nil {
		return "", err
	}
	if !utf8.ValidString(key) {
		// goja makes each byte that is not UTF-8 a U+FFFD, as JSON.parse of the text does:
		// names that differ only there are one name, which must be found repeated here.
		key = perByteFFFD(key)
	}
	p.space()
	if p.i >= len(p.data) || p.data[p.i] != ':' {
		return "", p.errorf("expected ':'")
	}
	p.i++
	p.space()
	return key, nil
}

// perByteFFFD is s with each byte that is not part of a UTF-8 sequence replaced by U+FFFD.
func perByteFFFD(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s { // ranging over a string gives U+FFFD for each such byte
		b.WriteRune(r)
	}
	return b.String()
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
