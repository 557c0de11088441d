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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLargeHeapAdvisesHugePages: LargeHeap readies a region of the heap whose mapping is
// advised for huge pages ("hg" in its VmFlags) from the first 2 MiB boundary in it, readable and
// writable, and lets it go: once a collection has run, the heap holds no such object, and its
// pages are the heap's to use. (Which of the heap's allocations land there is the runtime's
// page allocator's choice, the lowest free addresses first.) The collector's target may then
// rise to HugePercent.
//
// It runs in a process of its own, as LargeHeap does in crw, where the heap is young: in this
// test binary the garbage other tests left (200 MiB in TestTuneFollowsTheLiveHeap) may be freed
// by LargeHeap's own collection, below the region it readied.
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
	// That collection may have begun before the region was let go (one under way when
	// LargeHeap ran, whose mark it waited for, keeps it, allocated black): a collection begun
	// now, swept before it returns, frees it unless LargeHeap kept it reachable.
	runtime.GC()
	objects := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(objects)
	assert.Less(t, objects[0].Value.Uint64(), uint64(HugeRegion/2), "the heap's objects after LargeHeap let its region go")
	if tuned {
		// LargeHeap sets the target for a heap readied for huge pages itself (its live heap
		// is a few MiB), and so does each collection's end after it: look until it is.
		target := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		assert.Eventually(t, func() bool {
			metrics.Read(target)
			return target[0].Value.Uint64() == HugePercent
		}, 10*time.Second, time.Millisecond, "the collector's target after LargeHeap")
	}
	require.NotZero(t, readied.start, "no region advised")
	assert.Equal(t, uintptr(0), readied.start%hugePage, "the advice begins at a 2 MiB boundary")
	assert.GreaterOrEqual(t, readied.end-readied.start, uintptr(HugeRegion-2*hugePage))
	for _, addr := range []uintptr{readied.start, readied.end - hugePage} {
		flags := vmFlags(t, addr)
		assert.Contains(t, flags, "hg", "the mapping of %#x: %v", addr, flags)
		assert.Contains(t, flags, "rd")
		assert.Contains(t, flags, "wr")
	}
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
