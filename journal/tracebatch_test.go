package journal

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAReadingAgainTakesTheBlocksThatFitItsBytes: a reading again takes the rows of the blocks
// whose lines make traceChunkBytes at most, the rows of its first block whatever their size,
// and none past the last row asked for.
func TestAReadingAgainTakesTheBlocksThatFitItsBytes(t *testing.T) {
	const mb = 1 << 20
	// Five blocks of 64 rows (the last of 8): 1 MB, 3 MB, 10 MB, 2 MB and 1 MB of lines.
	tf := &TraceFile{blocks: []int64{0, 1 * mb, 4 * mb, 14 * mb, 16 * mb, 17 * mb}, rows: 4*traceBlock + 8, whole: true}
	for _, c := range []struct{ first, last, want uint64 }{
		{1, 512, 128},  // blocks 0 and 1 (4 MB); block 2 would make 14
		{1, 100, 100},  // up to the last asked for
		{65, 512, 64},  // block 1, then 13 MB with block 2
		{129, 512, 64}, // block 2 alone, 10 MB: the first block is taken whatever its size
		{150, 264, 43}, // the rest of block 2: 12 MB with block 3
		{193, 264, 72}, // blocks 3 and 4 (3 MB), to the last row
		{200, 200, 1},
	} {
		assert.Equal(t, c.want, tf.batch(c.first, c.last), "first %d, last %d", c.first, c.last)
	}
}
