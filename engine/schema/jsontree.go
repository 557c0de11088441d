package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/crw-dev/crw/engine/schema/internal/jsonscan"
)

// ErrNotJSON is wrapped by the errors of CheckStrict, Compile and Synthesize when their
// input is not exactly one JSON value.
var ErrNotJSON = errors.New("not a single JSON value")

type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// value is a decoded JSON value that keeps the order of object members, so that violations
// come out in document order and synthesized instances list properties as the schema does.
type value struct {
	kind kind
	b    bool
	num  json.Number
	str  string
	arr  []*value
	obj  []member
}

type member struct {
	key string
	val *value
}

// get returns the member named key; with duplicate keys the last one wins, as in
// encoding/json, which is what the validator sees.
func (v *value) get(key string) *value {
	if v == nil || v.kind != kindObject {
		return nil
	}
	for i := len(v.obj) - 1; i >= 0; i-- {
		if v.obj[i].key == key {
			return v.obj[i].val
		}
	}
	return nil
}

// Limits of a schema's JSON document, far beyond what the strict rules let through, so
// that reading and checking any schema takes bounded time and memory (the largest costs
// about 70 MB: BenchmarkCheckStrictLargest).
const (
	// MaxSchemaDepth is how deeply a schema document may nest (arrays and objects, the
	// root being level 1). A strict schema nests at most MaxDepth object and array
	// schemas, two or three levels of JSON each.
	MaxSchemaDepth = 128
	// MaxSchemaSize is the largest schema document, in bytes.
	MaxSchemaSize = 1 << 20
)

// ErrTooLarge is wrapped by the errors of CheckStrict, Compile and Synthesize when their
// input goes beyond MaxSchemaDepth or MaxSchemaSize.
var ErrTooLarge = errors.New("too large")

// parseJSON decodes data, which must hold exactly one JSON value within the limits of a
// schema document. Duplicate member names are kept, for the strict rules to name.
func parseJSON(data []byte) (*value, error) {
	if len(data) > MaxSchemaSize {
		return nil, fmt.Errorf("%w: %d bytes; the limit is %d", ErrTooLarge, len(data), MaxSchemaSize)
	}
	s := string(data)
	if strings.TrimLeft(s, " \t\r\n") == "" {
		return nil, fmt.Errorf("%w: empty input", ErrNotJSON)
	}
	var tree treeBuilder
	sc := &jsonscan.Scanner{S: s, MaxDepth: MaxSchemaDepth, Build: &tree}
	end, err := sc.Value(0)
	switch {
	case err != nil && err.EOF:
		return nil, fmt.Errorf("%w: unexpected end of input", ErrNotJSON)
	case err != nil:
		line, col := lineCol(s, err.Off+1)
		kind := ErrNotJSON
		if err.Deep {
			kind = ErrTooLarge
		}
		return nil, fmt.Errorf("%w: %s (line %d, column %d)", kind, err.Msg, line, col)
	}
	if rest := strings.TrimLeft(s[end:], " \t\r\n"); rest != "" {
		line, col := lineCol(s, len(s)-len(rest)+1)
		return nil, fmt.Errorf("%w: data after the value (line %d, column %d)", ErrNotJSON, line, col)
	}
	return tree.root, nil
}

// treeBuilder builds a value as the scanner reads it.
type treeBuilder struct {
	root *value
	open []*value // the arrays and objects not closed yet
	key  string   // the name of the next member
}

func (b *treeBuilder) add(v *value) {
	if len(b.open) == 0 {
		b.root = v
		return
	}
	top := b.open[len(b.open)-1]
	if top.kind == kindObject {
		top.obj = append(top.obj, member{key: b.key, val: v})
	} else {
		top.arr = append(top.arr, v)
	}
}

func (b *treeBuilder) Open(obj bool) {
	v := &value{kind: kindArray}
	if obj {
		v.kind = kindObject
	}
	b.add(v)
	b.open = append(b.open, v)
}

func (b *treeBuilder) Key(name string) { b.key = name }

func (b *treeBuilder) Close() { b.open = b.open[:len(b.open)-1] }

func (b *treeBuilder) Scalar(kind jsonscan.Kind, text string) {
	switch kind {
	case jsonscan.String:
		b.add(&value{kind: kindString, str: text})
	case jsonscan.Number:
		b.add(&value{kind: kindNumber, num: json.Number(text)})
	case jsonscan.True:
		b.add(&value{kind: kindBool, b: true})
	case jsonscan.False:
		b.add(&value{kind: kindBool})
	default:
		b.add(&value{kind: kindNull})
	}
}

// appendJSON writes v compactly, members in document order.
func appendJSON(buf []byte, v *value) []byte {
	switch v.kind {
	case kindNull:
		return append(buf, "null"...)
	case kindBool:
		if v.b {
			return append(buf, "true"...)
		}
		return append(buf, "false"...)
	case kindNumber:
		return append(buf, v.num...)
	case kindString:
		return appendString(buf, v.str)
	case kindArray:
		buf = append(buf, '[')
		for i, el := range v.arr {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSON(buf, el)
		}
		return append(buf, ']')
	default:
		buf = append(buf, '{')
		for i, m := range v.obj {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, m.key)
			buf = append(buf, ':')
			buf = appendJSON(buf, m.val)
		}
		return append(buf, '}')
	}
}

// appendString quotes s as JSON without HTML escaping, which only makes text harder to read.
func appendString(buf []byte, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(buf, bytes.TrimRight(b.Bytes(), "\n")...)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// ptr appends reference tokens to an RFC 6901 JSON pointer.
func ptr(base string, tokens ...string) string {
	var b strings.Builder
	b.WriteString(base)
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(t))
	}
	return b.String()
}

func ptrIndex(base string, tokens ...any) string {
	s := make([]string, len(tokens))
	for i, t := range tokens {
		s[i] = fmt.Sprint(t)
	}
	return ptr(base, s...)
}

// showPointer prints a pointer; the root, the empty pointer, reads "(root)".
func showPointer(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}
