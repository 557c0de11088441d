package journalfile

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSeqKeyOrder(t *testing.T) {
	t.Parallel()
	seqs := []uint64{0, 1, 2, 9, 10, 255, 256, 257, 65535, 65536, 1 << 24, 1<<32 - 1, 1 << 32, 1 << 56, 1<<63 - 1, 1 << 63, math.MaxUint64}
	for _, a := range seqs {
		for _, b := range seqs {
			t.Run(fmt.Sprintf("%d_vs_%d", a, b), func(t *testing.T) {
				assert.Equal(t, cmp.Compare(a, b), bytes.Compare(seqKey(a), seqKey(b)))
			})
		}
	}
}

func TestSeqKeyRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		key  []byte
		seq  uint64
		ok   bool
	}{
		{name: "one", key: seqKey(1), seq: 1, ok: true},
		{name: "max", key: seqKey(math.MaxUint64), seq: math.MaxUint64, ok: true},
		{name: "big endian", key: []byte{0, 0, 0, 0, 0, 0, 1, 2}, seq: 258, ok: true},
		{name: "short", key: []byte{1, 2, 3}},
		{name: "long", key: make([]byte, 9)},
		{name: "empty", key: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			seq, ok := parseSeqKey(tt.key)
			require.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.seq, seq)
		})
	}
}
