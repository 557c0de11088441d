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
	// page is the system's page, which mincore answers per.
	page = 4 << 10
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
	probeChunk := uintptr(unsafe.Pointer(probe)) &^ (chunk - 1)
	// Go places its heap's first page at random within the heap's first chunk (its randomized
	// heap base), so the heap may have begun in the chunk before the probe's: then pages of
	// that chunk are in use already, where one the heap has not reached (reserved, or no
	// mapping at all) has none.
	below, start, end := probeChunk-chunk, probeChunk, probeChunk+chunk
	var resident [2 * chunk / page]byte // below's pages, then the probe chunk's
	switch {
	case !inCore(below, end, resident[:]):
		if !inCore(probeChunk, end, resident[chunk/page:]) { // nothing mapped below
			return
		}
	case anyResident(resident[:chunk/page]):
		start = below
	}
	used := resident[(start-below)/page:]
	Readied.Chunk, Readied.End = start, end
	Readied.Advised = madvise(start, end-start, syscall.MADV_HUGEPAGE)
	if !Readied.Advised {
		return
	}
	// A 2 MiB page of which the heap has touched part keeps faulting 4 KiB at a time once
	// advised (a huge page is only given to a fault in a range with nothing mapped yet):
	// collapse each such page, wherever in the range it is (the runtime's first spans are
	// not all at its bottom).
	for at := start; at < end; at += hugePage {
		if anyResident(used[(at-start)/page:][:hugePage/page]) && madvise(at, hugePage, madvCollapse) {
			Readied.Collapsed = append(Readied.Collapsed, at)
		}
	}
}

// inCore fills resident with which pages from start to end are in memory (mincore): false
// where part of the range is not mapped.
func inCore(start, end uintptr, resident []byte) bool {
	_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, start, end-start, uintptr(unsafe.Pointer(&resident[0])))
	return errno == 0
}

func anyResident(pages []byte) bool {
	for _, p := range pages {
		if p&1 != 0 {
			return true
		}
	}
	return false
}

func madvise(start, length uintptr, advice int) bool {
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, length, uintptr(advice))
	return errno == 0
}
