package etcdrpc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMessagesRoundTrip: a transaction's response built field by field as etcd would send it
// reads back whole, nested transaction, keys and all.
func TestMessagesRoundTrip(t *testing.T) {
	header := func(b []byte) []byte { return putInt(putInt(b, 3, 42), 1, 7) }
	kv := func(b []byte) []byte {
		b = putBytesAlways(b, 1, []byte("/k\x00\xff"))
		b = putInt(b, 2, 5)
		b = putInt(b, 3, 9)
		b = putInt(b, 4, 2)
		b = putBytes(b, 5, []byte("value"))
		return putInt(b, 6, 0x1234)
	}
	rng := func(b []byte) []byte {
		b = putMessage(b, 1, header)
		b = putMessage(b, 2, kv)
		b = putBool(b, 3, true)
		return putInt(b, 4, 3)
	}
	inner := func(b []byte) []byte { return putBool(putMessage(b, 1, header), 2, true) }
	txn := putMessage(nil, 1, header)
	txn = putBool(txn, 2, true)
	txn = putMessage(txn, 3, func(b []byte) []byte { return putMessage(b, 1, rng) })
	txn = putMessage(txn, 3, func(b []byte) []byte { return putMessage(b, 4, inner) })
	txn = putMessage(txn, 3, func(b []byte) []byte { return putMessage(b, 3, func(b []byte) []byte { return putInt(b, 2, 4) }) })

	r, err := decodeTxn(txn)
	require.NoError(t, err)
	assert.Equal(t, int64(42), r.Header.Revision)
	assert.Equal(t, uint64(7), r.Header.ClusterID)
	assert.True(t, r.Succeeded)
	require.Len(t, r.Responses, 3)
	got := r.Responses[0].GetResponseRange()
	require.NotNil(t, got)
	assert.Equal(t, &RangeResponse{Header: ResponseHeader{ClusterID: 7, Revision: 42}, More: true, Count: 3,
		Kvs: []*KeyValue{{Key: []byte("/k\x00\xff"), CreateRevision: 5, ModRevision: 9, Version: 2, Value: []byte("value"), Lease: 0x1234}}}, got)
	assert.True(t, r.Responses[1].GetResponseTxn().Succeeded)
	assert.Equal(t, int64(4), r.Responses[2].GetResponseDeleteRange().Deleted)
}

// TestHostileMessagesAreErrors: truncated fields, lengths past the message, and transactions
// nested past any etcd sends are errors, never a panic or a stack overflow.
func TestHostileMessagesAreErrors(t *testing.T) {
	for name, msg := range map[string][]byte{
		"a truncated varint":       {0x08, 0x80},
		"a length past the end":    {0x0a, 0x10, 'a'},
		"a huge length":            {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"a tag alone":              {0x0a},
		"an unknown wire type":     {0x0f},
		"a varint of eleven bytes": {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"a fixed64 past the end":   {0x09, 1, 2},
	} {
		_, err := decodeTxn(msg)
		assert.Error(t, err, name)
	}
	deep := putBool(nil, 2, true)
	for range 1_000 {
		deep = putMessage(nil, 3, func(b []byte) []byte { return putMessage(b, 4, func(b []byte) []byte { return append(b, deep...) }) })
	}
	_, err := decodeTxn(deep)
	assert.ErrorIs(t, err, errTooDeep)
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte{0x0a, 0x02, 0x18, 0x01, 0x10, 0x01})
	f.Add([]byte{0x1a, 0x04, 0x0a, 0x02, 0x20, 0x03})
	f.Fuzz(func(t *testing.T, msg []byte) {
		_, _ = decodeTxn(msg)
		_, _ = decodeWatch(msg)
		_, _ = decodeRange(msg)
		_, _ = decodeLeaseGrant(msg)
		_, _ = decodeKeepAlive(msg)
	})
}
