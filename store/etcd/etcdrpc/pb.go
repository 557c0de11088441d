package etcdrpc

import (
	"errors"
	"fmt"
)

// The protobuf wire format, as much of it as etcd's messages use: varints, and bytes that hold
// strings or messages. Messages are built and read by hand (fields by number, as etcd's
// rpc.proto and kv.proto give them), so that crw is built without protobuf's runtime, whose
// registries cost every process its start.

const (
	wireVarint = 0
	wireI64    = 1
	wireBytes  = 2
	wireI32    = 5
)

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendTag(b []byte, field int, wire int) []byte {
	return appendVarint(b, uint64(field)<<3|uint64(wire))
}

// putInt appends field as a varint, unless it is 0 (proto3 leaves defaults out).
func putInt(b []byte, field int, v int64) []byte {
	if v == 0 {
		return b
	}
	return appendVarint(appendTag(b, field, wireVarint), uint64(v))
}

func putBool(b []byte, field int, v bool) []byte {
	if !v {
		return b
	}
	return appendVarint(appendTag(b, field, wireVarint), 1)
}

// putBytes appends field as bytes, unless it is empty.
func putBytes(b []byte, field int, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return putBytesAlways(b, field, v)
}

// putBytesAlways appends field as bytes, empty or not: a oneof member, or a key "" that must be
// sent.
func putBytesAlways(b []byte, field int, v []byte) []byte {
	b = appendVarint(appendTag(b, field, wireBytes), uint64(len(v)))
	return append(b, v...)
}

// putMessage appends field as the message enc appends.
func putMessage(b []byte, field int, enc func([]byte) []byte) []byte {
	msg := enc(nil)
	return putBytesAlways(b, field, msg)
}

var errTruncated = errors.New("a truncated protobuf message")

func readVarint(b []byte) (uint64, int, error) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, 0, errTruncated
}

// eachField calls fn with each field of msg: its number, wire type, and its varint value or
// its bytes.
func eachField(msg []byte, fn func(field, wire int, v uint64, data []byte) error) error {
	for len(msg) > 0 {
		tag, n, err := readVarint(msg)
		if err != nil {
			return err
		}
		msg = msg[n:]
		field, wire := int(tag>>3), int(tag&7)
		var v uint64
		var data []byte
		switch wire {
		case wireVarint:
			v, n, err = readVarint(msg)
			if err != nil {
				return err
			}
		case wireI64:
			n = 8
		case wireI32:
			n = 4
		case wireBytes:
			var l uint64
			l, n, err = readVarint(msg)
			if err != nil {
				return err
			}
			if l > uint64(len(msg)-n) {
				return errTruncated
			}
			data = msg[n : n+int(l)]
			n += int(l)
		default:
			return fmt.Errorf("a protobuf field of wire type %d", wire)
		}
		if n > len(msg) {
			return errTruncated
		}
		msg = msg[n:]
		if err := fn(field, wire, v, data); err != nil {
			return err
		}
	}
	return nil
}
