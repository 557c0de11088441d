package etcdrpc

import (
	"errors"
	"unsafe"
)

// etcd's messages (api/etcdserverpb/rpc.proto, api/mvccpb/kv.proto), field by field.

func (op *Op) appendRange(b []byte) []byte {
	b = putBytesAlways(b, 1, op.key)
	b = putBytes(b, 2, op.end)
	b = putInt(b, 3, op.limit)
	b = putInt(b, 4, op.rev)
	if op.sort != nil {
		b = putInt(b, 5, int64(op.sort.order))
		b = putInt(b, 6, int64(op.sort.target))
	}
	b = putBool(b, 7, op.serializable)
	b = putBool(b, 8, op.keysOnly)
	b = putBool(b, 9, op.countOnly)
	return b
}

func (op *Op) appendPut(b []byte) []byte {
	b = putBytesAlways(b, 1, op.key)
	b = putBytes(b, 2, op.val)
	return putInt(b, 3, int64(op.leaseID))
}

func (op *Op) appendDeleteRange(b []byte) []byte {
	b = putBytesAlways(b, 1, op.key)
	return putBytes(b, 2, op.end)
}

// appendRequestOp appends op as a transaction's RequestOp.
func (op *Op) appendRequestOp(b []byte) []byte {
	switch op.t {
	case tRange:
		return putMessage(b, 1, op.appendRange)
	case tPut:
		return putMessage(b, 2, op.appendPut)
	case tDeleteRange:
		return putMessage(b, 3, op.appendDeleteRange)
	default:
		return putMessage(b, 4, func(b []byte) []byte { return appendTxn(b, op.cmps, op.thenOps, op.elseOps) })
	}
}

// Compare's enums, as rpc.proto numbers them.
var (
	compareResults = map[string]int64{"EQUAL": 0, "GREATER": 1, "LESS": 2, "NOT_EQUAL": 3}
	compareTargets = map[string]int64{"VERSION": 0, "CREATE": 1, "MOD": 2, "VALUE": 3}
)

func appendCompare(b []byte, c Cmp) []byte {
	b = putInt(b, 1, compareResults[c.result])
	b = putInt(b, 2, compareTargets[c.target])
	b = putBytesAlways(b, 3, c.key)
	// The target's member of the oneof is always sent, 0 or "" included: it says which it is.
	switch c.target {
	case "VERSION":
		b = appendVarint(appendTag(b, 4, wireVarint), uint64(c.num))
	case "CREATE":
		b = appendVarint(appendTag(b, 5, wireVarint), uint64(c.num))
	case "MOD":
		b = appendVarint(appendTag(b, 6, wireVarint), uint64(c.num))
	case "VALUE":
		b = putBytesAlways(b, 7, c.value)
	}
	return b
}

func appendTxn(b []byte, cmps []Cmp, thenOps, elseOps []Op) []byte {
	for _, c := range cmps {
		b = putMessage(b, 1, func(b []byte) []byte { return appendCompare(b, c) })
	}
	for i := range thenOps {
		b = putMessage(b, 2, thenOps[i].appendRequestOp)
	}
	for i := range elseOps {
		b = putMessage(b, 3, elseOps[i].appendRequestOp)
	}
	return b
}

func decodeHeader(data []byte, h *ResponseHeader) error {
	return eachField(data, func(field, wire int, v uint64, _ []byte) error {
		switch field {
		case 1:
			h.ClusterID = v
		case 2:
			h.MemberID = v
		case 3:
			h.Revision = int64(v)
		case 4:
			h.RaftTerm = v
		}
		return nil
	})
}

// maxAmplification bounds what the decoding of one message makes of it: at most this many times
// its bytes (and meterSlack more) in the elements it holds. A message of empty elements (two
// bytes each on the wire) made ~70 times its bytes, 18 GB of a message of 256 MiB; what etcd
// sends crw makes less than 5 times (a key-value of crw's keys only, ~40 bytes on the wire, is
// ~130 in memory with its slot; rows are hundreds of bytes), the smallest key-value etcd sends
// (a key of one byte and its revisions, ~11 bytes) ~12 times, and its densest answer, a
// transaction's empty ranges (each with its header), ~15-18 times: at most 128 of them
// (--max-txn-ops), within meterSlack. Nested transactions of empty ones, which crw never asks
// for, are denser still, and past a few thousand are refused. The bound counts what the slices'
// growth makes too (element): a refused message has made ~17-19 times its bytes in all.
const (
	maxAmplification = 16
	meterSlack       = 64 << 10
)

// errAmplified is a message whose elements would take more than maxAmplification times its bytes.
var errAmplified = errors.New("a message whose elements take more than its bytes can hold")

// meter is what the decoding of one message may still make of it (maxAmplification).
type meter struct{ left int }

func meterFor(data []byte) *meter { return &meter{left: maxAmplification*len(data) + meterSlack} }

// charge counts n bytes more made.
func (m *meter) charge(n uintptr) error {
	if m.left -= int(n); m.left < 0 {
		return errAmplified
	}
	return nil
}

// element counts an element of n bytes more made, appended to a slice of pointers: with what
// its slot costs over the slice's growth (Go grows a long slice by a quarter at a time, ~5 slots
// made for each one kept).
func (m *meter) element(n uintptr) error { return m.charge(n + 5*unsafe.Sizeof(uintptr(0))) }

func decodeKeyValue(data []byte, m *meter) (*KeyValue, error) {
	if err := m.charge(unsafe.Sizeof(KeyValue{})); err != nil {
		return nil, err
	}
	kv := &KeyValue{}
	err := eachField(data, func(field, wire int, v uint64, b []byte) error {
		switch field {
		case 1:
			kv.Key = b
		case 2:
			kv.CreateRevision = int64(v)
		case 3:
			kv.ModRevision = int64(v)
		case 4:
			kv.Version = int64(v)
		case 5:
			kv.Value = b
		case 6:
			kv.Lease = int64(v)
		}
		return nil
	})
	return kv, err
}

func decodeRange(data []byte) (*RangeResponse, error) { return rangeOf(data, meterFor(data)) }

func rangeOf(data []byte, m *meter) (*RangeResponse, error) {
	r := &RangeResponse{}
	err := eachField(data, func(field, wire int, v uint64, b []byte) error {
		switch field {
		case 1:
			return decodeHeader(b, &r.Header)
		case 2:
			if err := m.element(0); err != nil { // its slot in Kvs; decodeKeyValue charges it
				return err
			}
			kv, err := decodeKeyValue(b, m)
			if err != nil {
				return err
			}
			r.Kvs = append(r.Kvs, kv)
			return nil
		case 3:
			r.More = v != 0
		case 4:
			r.Count = int64(v)
		}
		return nil
	})
	return r, err
}

// headerOf reads the header of a response that has nothing else the client reads.
func headerOf(data []byte) (h ResponseHeader, err error) {
	err = eachField(data, func(field, wire int, v uint64, b []byte) error {
		if field == 1 {
			return decodeHeader(b, &h)
		}
		return nil
	})
	return h, err
}

func decodePut(data []byte) (*PutResponse, error) {
	h, err := headerOf(data)
	return &PutResponse{Header: h}, err
}

func decodeLeaseRevoke(data []byte) (*LeaseRevokeResponse, error) {
	h, err := headerOf(data)
	return &LeaseRevokeResponse{Header: h}, err
}

// decodeKeepAlive reads a keepalive's response, whose fields are a grant's (header, ID, TTL).
func decodeKeepAlive(data []byte) (*LeaseKeepAliveResponse, error) {
	g, err := decodeLeaseGrant(data)
	return &LeaseKeepAliveResponse{Header: g.Header, ID: g.ID, TTL: g.TTL}, err
}

func decodeDeleteRange(data []byte) (*DeleteRangeResponse, error) {
	r := &DeleteRangeResponse{}
	err := eachField(data, func(field, wire int, v uint64, b []byte) error {
		switch field {
		case 1:
			return decodeHeader(b, &r.Header)
		case 2:
			r.Deleted = int64(v)
		}
		return nil
	})
	return r, err
}

// maxTxnDepth bounds the transactions nested in a response this client reads: etcd nests none
// deeper than the request it answers, and the store's go one deep.
const maxTxnDepth = 64

var errTooDeep = errors.New("transactions nested too deep")

func decodeResponseOp(data []byte, depth int, m *meter) (*ResponseOp, error) {
	if err := m.element(unsafe.Sizeof(ResponseOp{})); err != nil {
		return nil, err
	}
	op := &ResponseOp{}
	err := eachField(data, func(field, wire int, v uint64, b []byte) error {
		var err error
		switch field {
		case 1:
			if err = m.charge(unsafe.Sizeof(RangeResponse{})); err == nil {
				op.Range, err = rangeOf(b, m)
			}
		case 2:
			if err = m.charge(unsafe.Sizeof(PutResponse{})); err == nil {
				op.Put, err = decodePut(b)
			}
		case 3:
			if err = m.charge(unsafe.Sizeof(DeleteRangeResponse{})); err == nil {
				op.Delete, err = decodeDeleteRange(b)
			}
		case 4:
			op.Txn, err = txnOf(b, depth+1, m)
		}
		return err
	})
	return op, err
}

func decodeTxn(data []byte) (*TxnResponse, error) { return txnOf(data, 0, meterFor(data)) }

func txnOf(data []byte, depth int, m *meter) (*TxnResponse, error) {
	if depth > maxTxnDepth {
		return nil, errTooDeep
	}
	if err := m.charge(unsafe.Sizeof(TxnResponse{})); err != nil {
		return nil, err
	}
	r := &TxnResponse{}
	err := eachField(data, func(field, wire int, v uint64, b []byte) error {
		switch field {
		case 1:
			return decodeHeader(b, &r.Header)
		case 2:
			r.Succeeded = v != 0
		case 3:
			op, err := decodeResponseOp(b, depth, m)
			if err != nil {
				return err
			}
			r.Responses = append(r.Responses, op)
		}
		return nil
	})
	return r, err
}

func decodeLeaseGrant(data []byte) (*LeaseGrantResponse, error) {
	r := &LeaseGrantResponse{}
	err := eachField(data, func(field, wire int, v uint64, b []byte) error {
		switch field {
		case 1:
			return decodeHeader(b, &r.Header)
		case 2:
			r.ID = LeaseID(v)
		case 3:
			r.TTL = int64(v)
		case 4:
			r.Error = string(b)
		}
		return nil
	})
	return r, err
}

func decodeEvent(data []byte, m *meter) (*Event, error) {
	if err := m.element(unsafe.Sizeof(Event{})); err != nil {
		return nil, err
	}
	ev := &Event{}
	err := eachField(data, func(field, wire int, v uint64, b []byte) error {
		var err error
		switch field {
		case 1:
			ev.Type = EventType(v)
		case 2:
			ev.Kv, err = decodeKeyValue(b, m)
		case 3:
			ev.PrevKv, err = decodeKeyValue(b, m)
		}
		return err
	})
	if ev.Kv == nil && err == nil {
		if err = m.charge(unsafe.Sizeof(KeyValue{})); err == nil {
			ev.Kv = &KeyValue{}
		}
	}
	return ev, err
}

func decodeWatch(data []byte) (*WatchResponse, error) {
	m := meterFor(data)
	r := &WatchResponse{}
	err := eachField(data, func(field, wire int, v uint64, b []byte) error {
		switch field {
		case 1:
			return decodeHeader(b, &r.Header)
		case 3:
			r.Created = v != 0
		case 4:
			r.Canceled = v != 0
		case 5:
			r.CompactRevision = int64(v)
		case 6:
			r.cancelReason = string(b)
		case 11:
			ev, err := decodeEvent(b, m)
			if err != nil {
				return err
			}
			r.Events = append(r.Events, ev)
		}
		return nil
	})
	return r, err
}
