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
	// madvPopulateRead is MADV_POPULATE_READ (Linux 5.14), which syscall does not name.
	madvPopulateRead = 22
)

func init() {
	mapText()
	readyHeap()
}

// readyHeap advises the heap's first chunks MADV_HUGEPAGE and collapses the 2 MiB pages of
// them in use.
func readyHeap() {
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

// mapText maps the process's whole text into its page tables at once (MADV_POPULATE_READ):
// the linker lays each package's code together, its init among it, so the packages' inits
// touch code all over the text, ~150 first touches of it in `crw flow status`, each a fault
// (of 64 KiB of text around it) costing ~20 µs on a virtual machine. One call maps the ~15 MB
// of it the page cache holds in a fraction of that: ~3.5 ms off every command, for ~5 MB more
// resident (pages of the binary the page cache keeps anyway, shared by every crw process). A
// binary the page cache does not hold yet is read in whole, which costs no more than the
// faults reading it piecemeal did (a first run after the caches were dropped: the same time).
// The text is the mapping that holds this function's code, found in /proc/self/maps; where
// that cannot be read, or the kernel has no MADV_POPULATE_READ, nothing is done.
func mapText() {
	fn := mapText
	pc := **(**uintptr)(unsafe.Pointer(&fn)) // a func value points to its code's address
	// Not blocking: whatever is at the path (a FIFO where /proc is not the kernel's) makes no
	// command wait.
	fd, err := syscall.Open("/proc/self/maps", syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	// The executable's mappings are among the first: after the heap's, at most, where the
	// executable is mapped high (built as a position-independent executable).
	var buf [8192]byte
	n, _ := readFull(fd, buf[:])
	_ = syscall.Close(fd)
	start, end, ok := textMapping(buf[:n], pc)
	if !ok {
		return
	}
	Readied.TextStart, Readied.TextEnd = start, end
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvPopulateRead); errno != 0 {
		Readied.TextErr = errno
	}
}

// readFull reads from fd until buf is full or the file ends.
func readFull(fd int, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if m <= 0 || err != nil {
			return n, err
		}
		n += m
	}
	return n, nil
}

// textMapping finds, in the lines of /proc/self/maps in maps ("start-end perms offset …", the
// addresses in hex), the executable mapping that holds pc; a line cut off by the end of maps
// is not read.
func textMapping(maps []byte, pc uintptr) (start, end uintptr, ok bool) {
	for len(maps) > 0 {
		i := 0
		for i < len(maps) && maps[i] != '\n' {
			i++
		}
		if i == len(maps) {
			return 0, 0, false
		}
		line := maps[:i]
		maps = maps[i+1:]
		start, rest, ok1 := hexPrefix(line)
		if !ok1 || len(rest) == 0 || rest[0] != '-' {
			continue
		}
		end, rest, ok2 := hexPrefix(rest[1:])
		if !ok2 || len(rest) < 5 || rest[0] != ' ' {
			continue
		}
		if start <= pc && pc < end && rest[1] == 'r' && rest[3] == 'x' {
			return start, end, true
		}
	}
	return 0, 0, false
}

// hexPrefix reads the hexadecimal number s begins with (lower case, as the kernel writes it).
func hexPrefix(s []byte) (v uintptr, rest []byte, ok bool) {
	i := 0
	for ; i < len(s) && i < 16; i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uintptr(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uintptr(c-'a'+10)
		default:
			return v, s[i:], i > 0
		}
	}
	return v, s[i:], i > 0
}
