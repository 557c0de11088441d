package gctune

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLargeHeapAdvisesHugePages: after LargeHeap, an allocation too large for the pages the
// heap had lands in the region it readied, whose mapping is advised for huge pages ("hg" in
// its VmFlags) from the first 2 MiB boundary in it, and is readable and writable. (The heap
// finds room for an allocation at the lowest address it can: one nearly as large as the region
// has none below it.) The collector's target may then rise to HugePercent.
func TestLargeHeapAdvisesHugePages(t *testing.T) {
	LargeHeap()
	assert.Equal(t, HugePercent, mostPercent())
	obj := make([]byte, HugeRegion-2*hugePage)
	addr := (uintptr(unsafe.Pointer(unsafe.SliceData(obj))) + hugePage) &^ (hugePage - 1)
	flags := vmFlags(t, addr)
	assert.Contains(t, flags, "hg", "the mapping of %#x: %v", addr, flags)
	assert.Contains(t, flags, "rd")
	assert.Contains(t, flags, "wr")
	obj[len(obj)-1] = 1
	runtime.KeepAlive(obj)

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
