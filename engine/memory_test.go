package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/store"
)

// peakLiveHeap runs benchScript for n calls, 16 at a time, on the on-disk journal, and returns
// the largest live heap seen after a collection while it ran.
func peakLiveHeap(t *testing.T, n int) uint64 {
	dir := t.TempDir()
	wf := filepath.Join(dir, "bench.js")
	require.NoError(t, os.WriteFile(wf, []byte(benchScript), 0o600))
	answers := filepath.Join(dir, "answers.json")
	require.NoError(t, os.WriteFile(answers, []byte(benchAnswers), 0o600))
	input, _ := json.Marshal(map[string]int{"n": n, "width": 16})
	svc := localService(t, filepath.Join(dir, "state"))

	var peak uint64
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}()
	res, err := svc.Run(context.Background(), engine.CreateOptions{
		Workflow: wf, Input: input, BackendOpts: map[string]string{"answers": answers}, Pool: 16,
	}, engine.ExecOptions{})
	close(done)
	<-sampled
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, res.Status)
	return peak
}

// TestMemoryDoesNotGrowWithCalls: a run keeps what a later call may need of an ended call (a
// handle's thread), not the call: ten times the calls must not take ten times the memory.
// Keeping every call's request, rows and promise cost about 8 KiB a call.
func TestMemoryDoesNotGrowWithCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 22,000 calls")
	}
	small := peakLiveHeap(t, 2000)
	large := peakLiveHeap(t, 20000)
	t.Logf("peak live heap: %d KiB at 2,000 calls, %d KiB at 20,000", small>>10, large>>10)
	perCall := float64(int64(large)-int64(small)) / 18000
	assert.Less(t, perCall, 1024.0, "bytes kept per call")
}
