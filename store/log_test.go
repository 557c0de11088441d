package store_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/store"
)

// TestWholeLinesReadsOnlyWholeLines: a line still being written is left for the next read, a
// read stops near max at a line's end, and a line past MaxLogLine is skipped, not waited on.
func TestWholeLinesReadsOnlyWholeLines(t *testing.T) {
	t.Parallel()
	r := bytes.NewReader([]byte("one\ntwo\nthr"))
	got, next, err := store.WholeLines(r, r.Size(), 0, 0)
	require.NoError(t, err)
	assert.Equal(t, "one\ntwo\n", string(got))
	assert.Equal(t, int64(8), next)
	got, again, err := store.WholeLines(r, r.Size(), next, 0)
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.Equal(t, next, again)

	got, next, err = store.WholeLines(bytes.NewReader([]byte("aaaa\nbbbb\ncccc\n")), int64(len("aaaa\nbbbb\ncccc\n")), 0, 6)
	require.NoError(t, err)
	assert.Equal(t, "aaaa\n", string(got))
	assert.Equal(t, int64(5), next)

	long := strings.Repeat("x", store.MaxLogLine+10)
	got, next, err = store.WholeLines(bytes.NewReader([]byte(long+"\nafter\n")), int64(len(long+"\nafter\n")), 0, 10)
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.Greater(t, next, int64(0), "the long line is passed over")
	got, _, err = store.WholeLines(bytes.NewReader([]byte(long+"\nafter\n")), int64(len(long+"\nafter\n")), next, 10)
	require.NoError(t, err)
	assert.Contains(t, string(got), "after\n")
}
