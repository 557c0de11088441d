package journalfile

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestEntryIsSmall: the writer holds an entry for every row buffered (a 50,000-call fan-out
// buffers that many prepared rows at once) and keeps the largest batch's array for reuse, so
// what an entry keeps for the summary must stay small: not a whole journal.Row (680 bytes).
func TestEntryIsSmall(t *testing.T) {
	t.Parallel()
	assert.LessOrEqual(t, unsafe.Sizeof(entry{}), uintptr(112))
}
