package etcdrpc

import (
	"fmt"
	"runtime"
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

// A message of empty elements (two bytes each on the wire: a key-value, an event, a
// transaction's response) is refused as it would make more than maxAmplification times its
// bytes, where it made ~70 times them (18 GB of a message of the 256 MiB a frame may hold); a
// message of what etcd sends crw is read whole.
func TestAMessageOfEmptyElementsIsRefused(t *testing.T) {
	const size = 4 << 20
	repeat := func(unit []byte) []byte {
		msg := make([]byte, 0, size)
		for len(msg) < size {
			msg = append(msg, unit...)
		}
		return msg
	}
	for name, decode := range map[string]func() error{
		"a range's key-values": func() error { _, err := decodeRange(repeat([]byte{0x12, 0x00})); return err },
		"a watch's events":     func() error { _, err := decodeWatch(repeat([]byte{0x5a, 0x00})); return err },
		"a txn's responses":    func() error { _, err := decodeTxn(repeat([]byte{0x1a, 0x00})); return err },
		"a txn's ranges": func() error {
			_, err := decodeTxn(repeat([]byte{0x1a, 0x02, 0x0a, 0x00}))
			return err
		},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := decode()
		runtime.ReadMemStats(&after)
		assert.ErrorIs(t, err, errAmplified, name)
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(2*maxAmplification*size), name)
	}

	// A listing of 20,000 keys of crw's (keys only), a page of rows, and a watch's deletes of
	// the shortest keys etcd has (one byte, with its revisions).
	var deletes []byte
	for i := range 100_000 {
		deletes = putMessage(deletes, 11, func(b []byte) []byte {
			b = putInt(b, 1, 1)
			return putMessage(b, 2, func(b []byte) []byte {
				b = putBytes(b, 1, []byte{'a' + byte(i%26)})
				return putInt(b, 3, 1)
			})
		})
	}
	w, err := decodeWatch(deletes)
	require.NoError(t, err, "deletes")
	assert.Len(t, w.Events, 100_000)
	var listing, rows []byte
	for i := range 20_000 {
		kv := func(b []byte) []byte {
			b = putBytes(b, 1, []byte(fmt.Sprintf("crw/flow/run-%06d/spec", i)))
			b = putInt(b, 2, int64(i+1))
			b = putInt(b, 3, int64(i+1))
			return putInt(b, 4, 1)
		}
		listing = putMessage(listing, 2, kv)
		if i < 512 {
			rows = putMessage(rows, 2, func(b []byte) []byte {
				return putBytes(kv(b), 5, []byte(`{"seq":1,"type":"turn_started","at":"2026-12-07T22:50:22Z","call":"c1","k":1}`))
			})
		}
	}
	for name, msg := range map[string][]byte{"listing": listing, "rows": rows} {
		r, err := decodeRange(msg)
		require.NoError(t, err, name)
		assert.NotEmpty(t, r.Kvs, name)
	}
	r, err := decodeRange(listing)
	require.NoError(t, err)
	assert.Len(t, r.Kvs, 20_000)
}
