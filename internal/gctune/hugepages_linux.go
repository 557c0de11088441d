package gctune

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on the machines crw runs on (x86-64, and
// arm64 with 4 KiB pages).
const hugePage = 2 << 20

// adviseHugePages has the runtime map size bytes of heap now, advises their 2 MiB-aligned
// interior MADV_HUGEPAGE, and lets them go: the runtime maps its heap as it grows, and a
// mapping made after advice given to the range it reserved drops that advice, so the range must
// be mapped first. The allocation is fresh memory, known to be zero, which nothing touches; the
// collection its size starts frees it, and the heap's next allocations land there once the
// pages below it are taken (its page allocator takes the lowest free addresses first). It
// reports whether the advice was taken; a system whose transparent huge pages are "never" is
// not asked, and costs nothing.
func adviseHugePages(size int) bool {
	if mode, err := os.ReadFile(thpMode); err == nil && bytes.Contains(mode, []byte("[never]")) {
		return false
	}
	// No collection may start while the region is live: it would keep the region (reachable
	// from here), and a second one would be needed to free it.
	percent := debug.SetGCPercent(-1)
	region := make([]byte, size)
	base := uintptr(unsafe.Pointer(unsafe.SliceData(region)))
	start := (base + hugePage - 1) &^ (hugePage - 1)
	end := (base + uintptr(size)) &^ (hugePage - 1)
	// An error (a kernel without transparent huge pages) leaves the heap as it was.
	advised := start < end && unix.Madvise(region[start-base:end-base], unix.MADV_HUGEPAGE) == nil
	if advised {
		readied.start, readied.end = start, end
	}
	runtime.KeepAlive(region)
	// region is dead: its last use is above. The collection its size starts frees it, in the
	// background, while the process goes on (runtime.GC would wait for it: ~3-8 ms).
	debug.SetGCPercent(percent)
	if percent < 0 {
		runtime.GC() // a GOGC=off process collects nothing by itself
	}
	return advised
}

// readied is the range of the heap the last advice taken covers, for tests.
var readied struct{ start, end uintptr }

// thpMode is where Linux says when it gives transparent huge pages: always, madvise or never.
var thpMode = "/sys/kernel/mm/transparent_hugepage/enabled"
