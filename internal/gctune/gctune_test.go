package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestPercentFor(t *testing.T) {
	for _, c := range []struct {
		live       uint64
		want, huge int
	}{
		{0, 200, 400},
		{1 << 20, 200, 400},
		{8 << 20, 200, 400},
		{10 << 20, 200, 380},
		{12 << 20, 200, 300},
		{16 << 20, 200, 200},
		{20 << 20, 140, 140},
		{24 << 20, 100, 100},
		{30 << 20, 60, 60},
		{32 << 20, 50, 50},
		{48 << 20, 50, 50},
		{1 << 30, 50, 50},
	} {
		assert.Equal(t, c.want, PercentFor(c.live, ProcessPercent), "live %d MiB", c.live>>20)
		assert.Equal(t, c.huge, PercentFor(c.live, HugePercent), "live %d MiB, huge pages", c.live>>20)
	}
}

// TestTuneFollowsTheLiveHeap: with 200 MiB live the target drops to 50%, and goes back to
// 200% once the heap is small again.
func TestTuneFollowsTheLiveHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 200 MiB")
	}
	t.Setenv("GOGC", "")
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	Tune()
	// The finalizer runs in the background after a collection: look again until it has.
	becomes := func(want int) bool {
		return assert.Eventually(t, func() bool {
			runtime.GC()
			p := debug.SetGCPercent(-1)
			debug.SetGCPercent(p)
			return p == want
		}, 10*time.Second, time.Millisecond, "GC percent %d", want)
	}
	big := make([][]byte, 200)
	for i := range big {
		big[i] = make([]byte, 1<<20)
	}
	becomes(50)
	runtime.KeepAlive(big)
	becomes(mostPercent())
}
