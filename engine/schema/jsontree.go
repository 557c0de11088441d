package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
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

// parseJSON decodes data, which must hold exactly one JSON value.
func parseJSON(data []byte) (*value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%w: empty input", ErrNotJSON)
		}
		if err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("%w: unexpected end of input", ErrNotJSON)
		}
		return nil, fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the value at offset %d", ErrNotJSON, dec.InputOffset())
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (*value, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &value{kind: kindNull}, nil
	case bool:
		return &value{kind: kindBool, b: t}, nil
	case json.Number:
		return &value{kind: kindNumber, num: t}, nil
	case string:
		return &value{kind: kindString, str: t}, nil
	case json.Delim:
		switch t {
		case '[':
			v := &value{kind: kindArray}
			for dec.More() {
				el, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				v.arr = append(v.arr, el)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return v, nil
		case '{':
			v := &value{kind: kindObject}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key is not a string")
				}
				el, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				v.obj = append(v.obj, member{key: key, val: el})
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return v, nil
		}
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
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
