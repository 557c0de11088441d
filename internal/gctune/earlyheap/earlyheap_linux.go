package earlyheap

import (
	"syscall"
	"unsafe"
)

const (
	// chunk is the unit in which Go's runtime maps its heap (its page allocator's chunk): the
	// range around the first allocations is mapped whole, so advice given to it stays.
	chunk = 4 << 20
	// hugePage is a transparent huge page on the machines crw runs on (x86-64, and arm64 with
	// 4 KiB pages).
	hugePage = 2 << 20
	// madvCollapse is MADV_COLLAPSE (Linux 6.1), which syscall does not name.
	madvCollapse = 25
)

func init() {
	if godebug, _ := syscall.Getenv("GODEBUG"); refused(godebug) {
		return
	}
	// An allocation of the init itself: the runtime has just placed it in the part of its heap
	// the process has touched so far.
	probe := new([64]byte)
	at := uintptr(unsafe.Pointer(probe))
	start := at &^ (chunk - 1)
	Readied.Chunk = start
	Readied.Advised = madvise(start, chunk, syscall.MADV_HUGEPAGE)
	if !Readied.Advised {
		return
	}
	// The 2 MiB pages the heap has touched part of keep faulting 4 KiB at a time once
	// advised (a huge page is only given to a fault in a range with nothing mapped yet):
	// collapse them, from the chunk's start to the page the probe is in.
	Readied.InUse = (at + hugePage) &^ (hugePage - 1)
	Readied.Collapsed = madvise(start, Readied.InUse-start, madvCollapse)
}

func madvise(start, length uintptr, advice int) bool {
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, length, uintptr(advice))
	return errno == 0
}
