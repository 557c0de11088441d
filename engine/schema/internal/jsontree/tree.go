package jsontree

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/crw-dev/crw/engine/schema/internal/jsonscan"
)

// ErrNotJSON is wrapped by the errors of Parse when its input is not exactly one JSON value.
var ErrNotJSON = errors.New("not a single JSON value")

// Kind is the kind of a Value.
type Kind uint8

// The kinds of JSON values.
const (
	KindNull Kind = iota
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

// Value is a decoded JSON value that keeps the order of object members, so that violations
// come out in document order and synthesized instances list properties as the schema does.
type Value struct {
	Kind Kind
	Bool bool
	Num  json.Number // as written
	Str  string
	Arr  []*Value
	Obj  []Member // in document order, repeated names included
}

// ContainerKind is KindObject for an object, else KindArray.
func ContainerKind(obj bool) Kind {
	if obj {
		return KindObject
	}
	return KindArray
}

// Member is a member of an object.
type Member struct {
	Key string
	Val *Value
}

// Get returns the member named key; with duplicate keys the last one wins, as in
// encoding/json, which is what the validator sees. It is nil when v is not an object.
func (v *Value) Get(key string) *Value {
	if v == nil || v.Kind != KindObject {
		return nil
	}
	for i := len(v.Obj) - 1; i >= 0; i-- {
		if v.Obj[i].Key == key {
			return v.Obj[i].Val
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

// ErrTooLarge is wrapped by the errors of Parse when its input goes beyond MaxSchemaDepth or MaxSchemaSize.
var ErrTooLarge = errors.New("too large")

// Parse decodes s, which must hold exactly one JSON value within the limits of a
// schema document. Duplicate member names are kept, for the strict rules to name. Nodes
// is how many values the tree holds, a measure of the memory it takes.
func Parse(s string) (root *Value, nodes int, err error) {
	if len(s) > MaxSchemaSize {
		return nil, 0, fmt.Errorf("%w: %d bytes; the limit is %d", ErrTooLarge, len(s), MaxSchemaSize)
	}
	if strings.TrimLeft(s, " \t\r\n") == "" {
		return nil, 0, fmt.Errorf("%w: empty input", ErrNotJSON)
	}
	var tree treeBuilder
	sc := &jsonscan.Scanner{S: s, MaxDepth: MaxSchemaDepth, Build: &tree}
	end, serr := sc.Value(0)
	switch {
	case serr != nil && serr.EOF:
		return nil, 0, fmt.Errorf("%w: unexpected end of input", ErrNotJSON)
	case serr != nil:
		line, col := jsonscan.LineCol(s, serr.Off+1)
		kind := ErrNotJSON
		if serr.Deep {
			kind = ErrTooLarge
		}
		return nil, 0, fmt.Errorf("%w: %s (line %d, column %d)", kind, serr.Msg, line, col)
	}
	if rest := strings.TrimLeft(s[end:], " \t\r\n"); rest != "" {
		line, col := jsonscan.LineCol(s, len(s)-len(rest)+1)
		return nil, 0, fmt.Errorf("%w: data after the value (line %d, column %d)", ErrNotJSON, line, col)
	}
	return tree.root, tree.nodes, nil
}

// treeBuilder builds a value as the scanner reads it.
type treeBuilder struct {
	root  *Value
	open  []*Value // the arrays and objects not closed yet
	key   string   // the name of the next member
	nodes int
}

func (b *treeBuilder) add(v *Value) {
	b.nodes++
	if len(b.open) == 0 {
		b.root = v
		return
	}
	top := b.open[len(b.open)-1]
	if top.Kind == KindObject {
		top.Obj = append(top.Obj, Member{Key: b.key, Val: v})
	} else {
		top.Arr = append(top.Arr, v)
	}
}

func (b *treeBuilder) Open(obj bool) {
	v := &Value{Kind: ContainerKind(obj)}
	b.add(v)
	b.open = append(b.open, v)
}

func (b *treeBuilder) Key(name string) { b.key = name }

func (b *treeBuilder) Close() { b.open = b.open[:len(b.open)-1] }

func (b *treeBuilder) Scalar(kind jsonscan.Kind, text string) {
	switch kind {
	case jsonscan.String:
		b.add(&Value{Kind: KindString, Str: text})
	case jsonscan.Number:
		b.add(&Value{Kind: KindNumber, Num: json.Number(text)})
	case jsonscan.True:
		b.add(&Value{Kind: KindBool, Bool: true})
	case jsonscan.False:
		b.add(&Value{Kind: KindBool})
	default:
		b.add(&Value{Kind: KindNull})
	}
}

// AppendJSON writes v compactly, members in document order.
func AppendJSON(buf []byte, v *Value) []byte {
	switch v.Kind {
	case KindNull:
		return append(buf, "null"...)
	case KindBool:
		if v.Bool {
			return append(buf, "true"...)
		}
		return append(buf, "false"...)
	case KindNumber:
		return append(buf, v.Num...)
	case KindString:
		return AppendString(buf, v.Str)
	case KindArray:
		buf = append(buf, '[')
		for i, el := range v.Arr {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = AppendJSON(buf, el)
		}
		return append(buf, ']')
	default:
		buf = append(buf, '{')
		for i, m := range v.Obj {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = AppendString(buf, m.Key)
			buf = append(buf, ':')
			buf = AppendJSON(buf, m.Val)
		}
		return append(buf, '}')
	}
}

// AppendString quotes s as JSON without HTML escaping, which only makes text harder to read.
func AppendString(buf []byte, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(buf, bytes.TrimRight(b.Bytes(), "\n")...)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// Ptr appends reference tokens to an RFC 6901 JSON pointer.
func Ptr(base string, tokens ...string) string {
	var b strings.Builder
	b.WriteString(base)
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(t))
	}
	return b.String()
}

// PtrIndex is Ptr of tokens written as fmt.Sprint writes them.
func PtrIndex(base string, tokens ...any) string {
	s := make([]string, len(tokens))
	for i, t := range tokens {
		s[i] = fmt.Sprint(t)
	}
	return Ptr(base, s...)
}

// ShowPointer prints a pointer; the root, the empty pointer, reads "(root)".
func ShowPointer(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}
