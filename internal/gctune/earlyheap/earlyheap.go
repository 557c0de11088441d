// Package earlyheap readies the heap a crw process starts in for transparent huge pages, and
// maps its text, while its packages are being initialized: imported by the command alone, for
// the side effect of its init.
//
// A crw process's packages allocate ~1.5 MB as they are initialized (goja, esbuild, the etcd
// client's protobuf descriptors, the MCP SDK…) and its runtime more, all of it in the first
// 4 MiB chunks the runtime maps of its heap. Each 4 KiB page of it touched for the first time is
// a fault, and on a virtual machine a fault costs ~10-25 µs: ~450 of the ~850 faults of `crw
// --version` are its heap's, 30-45% of its time. Go's heap asks for no huge pages; this
// package's init, early among the process's, advises the chunk its own allocation lands in
// MADV_HUGEPAGE, and the chunk before where the heap began there (Go starts its heap at a
// random page of its first chunk), and collapses their 2 MiB pages that are in use already
// (MADV_COLLAPSE, Linux 6.1), so the rest faults 2 MiB at a time. It costs a process ~0.1 ms and
// a few MB more resident at most.
//
// Packages are initialized in the order of their import paths once what they import is, so the
// package imports nothing but syscall (its parsing is written out by hand): its init then
// follows the runtime's packages and the few that sort before "syscall", and precedes every
// package that imports os. An import of strings put it after unicode, the crypto packages and
// encoding/gob, with ~40 more of the heap's pages faulted 4 KiB at a time, ~1.5 ms of every
// command.
//
// The init first maps the process's whole text into its page tables (MADV_POPULATE_READ): the
// packages' inits touch code all over it, and each first touch of a part of it is a fault.
//
// Where the system gives no huge pages (transparent_hugepage "never", a kernel without them or
// without MADV_COLLAPSE) the calls fail or change nothing, and the heap stays as it was. So does
// a process whose GODEBUG has disablethp=1 (Go's own switch against huge pages).
package earlyheap

// Readied is what the init did, for tests and for the curious: the range of the heap it
// advised for huge pages (from Chunk to End: the chunk the probe is in, and the one before
// where the heap began there), whether the advice was taken, and the 2 MiB pages of it that
// were in use and were collapsed into huge pages.
var Readied struct {
	Chunk, End uintptr
	Advised    bool
	Collapsed  []uintptr
	// TextStart and TextEnd are the process's text (zero: it was not found), and TextErr the
	// error of its mapping at once (EINVAL: a kernel older than 5.14).
	TextStart, TextEnd uintptr
	TextErr            error
}

// refused is whether the process's GODEBUG turns Go's huge pages off (disablethp=1): its last
// valid setting of it wins, as in the runtime, which takes a value that is a 32-bit decimal
// integer and ignores any other.
func refused(godebug string) bool {
	off := false
	for len(godebug) > 0 {
		setting := godebug
		if i := indexByte(godebug, ','); i >= 0 {
			setting, godebug = godebug[:i], godebug[i+1:]
		} else {
			godebug = ""
		}
		const key = "disablethp="
		if len(setting) < len(key) || setting[:len(key)] != key {
			continue
		}
		if n, ok := parseInt32(setting[len(key):]); ok {
			off = n != 0
		}
	}
	return off
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}

// parseInt32 reads s as strconv.ParseInt(s, 10, 32) does: an optional sign, then at least one
// decimal digit, within an int32.
func parseInt32(s string) (int32, bool) {
	negative := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		negative, s = s[0] == '-', s[1:]
	}
	if len(s) == 0 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		if n = n*10 + int64(s[i]-'0'); n > 1<<31 {
			return 0, false
		}
	}
	if negative {
		n = -n
	}
	if n > 1<<31-1 {
		return 0, false
	}
	return int32(n), true
}
