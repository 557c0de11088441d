package gctune

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLargeHeapAdvisesHugePages: after LargeHeap, an allocation too large for the pages the
// heap had lands in the region it readied, whose mapping is advised for huge pages ("hg" in
// its VmFlags) from the first 2 MiB boundary in it, and is readable and writable. (The heap
// finds room for an allocation at the lowest address it can: one nearly as large as the region
// has none below it.) The collector's target may then rise to HugePercent.
//
// It runs in a process of its own, as LargeHeap does in crw, where the heap is young: in this
// test binary the garbage other tests left (200 MiB in TestTuneFollowsTheLiveHeap) may be freed
// by LargeHeap's own collection, below the region it readied, and the allocation land there.
func TestLargeHeapAdvisesHugePages(t *testing.T) {
	if mode, err := os.ReadFile(thpMode); err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("this system gives no transparent huge pages (%s: %q, %v)", thpMode, mode, err)
	}
	if os.Getenv(youngHeap) != "" {
		largeHeapLandsInHugePages(t)
		return
	}
	// GOGC=off: a process that collects nothing by itself has the region freed all the same.
	for _, gogc := range []string{os.Getenv("GOGC"), "off"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLargeHeapAdvisesHugePages$", "-test.v")
		cmd.Env = append(os.Environ(), youngHeap+"=1", "GOGC="+gogc)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "GOGC=%s: %s", gogc, out)
		assert.Contains(t, string(out), "--- PASS: TestLargeHeapAdvisesHugePages", "GOGC=%s: %s", gogc, out)
	}
}

// allocated keeps what largeHeapLandsInHugePages allocates from being optimized away.
var allocated []byte

// youngHeap marks the process TestLargeHeapAdvisesHugePages starts.
const youngHeap = "CRW_GCTUNE_YOUNG_HEAP"

func largeHeapLandsInHugePages(t *testing.T) {
	tuned := os.Getenv("GOGC") == "" // Tune leaves a GOGC of the user's as it is
	Tune()
	cycles := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(cycles)
	before := cycles[0].Value.Uint64()
	LargeHeap()
	assert.Equal(t, HugePercent, mostPercent())
	// The region is freed by the collection the process's next allocations start, in the
	// background: allocate, as crw goes on doing, until one has run.
	require.Eventually(t, func() bool {
		allocated = make([]byte, 64<<10)
		metrics.Read(cycles)
		return cycles[0].Value.Uint64() > before
	}, 10*time.Second, time.Millisecond, "a collection after LargeHeap")
	if tuned {
		// LargeHeap sets the target for a heap readied for huge pages itself (its live heap
		// is a few MiB), and so does each collection's end after it: look until it is.
		target := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		assert.Eventually(t, func() bool {
			metrics.Read(target)
			return target[0].Value.Uint64() == HugePercent
		}, 10*time.Second, time.Millisecond, "the collector's target after LargeHeap")
	}
	obj := make([]byte, HugeRegion-2*hugePage)
	addr := (uintptr(unsafe.Pointer(unsafe.SliceData(obj))) + hugePage) &^ (hugePage - 1)
	flags := vmFlags(t, addr)
	assert.Contains(t, flags, "hg", "the mapping of %#x: %v", addr, flags)
	assert.Contains(t, flags, "rd")
	assert.Contains(t, flags, "wr")
	obj[len(obj)-1] = 1
	runtime.KeepAlive(obj)
}

// TestNoHugePagesNoAdvice: where the system's transparent huge pages are "never", nothing is
// advised (so the collector's target stays as it was), and where they are "madvise", the
// advice is taken.
func TestNoHugePagesNoAdvice(t *testing.T) {
	mode := filepath.Join(t.TempDir(), "enabled")
	old := thpMode
	thpMode = mode
	defer func() { thpMode = old }()
	defer hugeHeap.Store(hugeHeap.Load()) // an advice taken says so to the tests after this one
	require.NoError(t, os.WriteFile(mode, []byte("always madvise [never]\n"), 0o600))
	assert.False(t, adviseHugePages(HugeRegion))
	require.NoError(t, os.WriteFile(mode, []byte("always [madvise] never\n"), 0o600))
	assert.True(t, adviseHugePages(4*hugePage))
}

// vmFlags are the VmFlags of the mapping of this process that holds addr.
func vmFlags(t *testing.T, addr uintptr) []string {
	data, err := os.ReadFile("/proc/self/smaps")
	require.NoError(t, err)
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(f[0], "-"); ok && !strings.HasSuffix(f[0], ":") {
			a, errA := strconv.ParseUint(lo, 16, 64)
			b, errB := strconv.ParseUint(hi, 16, 64)
			in = errA == nil && errB == nil && uint64(addr) >= a && uint64(addr) < b
			continue
		}
		if in && f[0] == "VmFlags:" {
			return f[1:]
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return nil
}
