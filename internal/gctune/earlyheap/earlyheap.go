// Package earlyheap readies the heap a crw process starts in for transparent huge pages while
// its packages are being initialized: imported by the command alone, for the side effect of its
// init.
//
// A crw process's packages allocate ~1.5 MB as they are initialized (goja, esbuild, the etcd
// client's protobuf descriptors, the MCP SDK…) and its runtime more, all of it in the first
// 4 MiB chunks the runtime maps of its heap. Each 4 KiB page of it touched for the first time is
// a fault, and on a virtual machine a fault costs ~10-25 µs: ~450 of the ~850 faults of `crw
// --version` are its heap's, 30-45% of its time. Go's heap asks for no huge pages; this
// package's init, early among the process's (it imports nothing that needs more than the
// runtime and syscall, and packages are initialized in the order of their import paths once
// what they import is), advises the chunk its own allocation lands in MADV_HUGEPAGE, and the
// chunk before where the heap began there (Go starts its heap at a random page of its first
// chunk), and collapses their 2 MiB pages that are in use already (MADV_COLLAPSE, Linux 6.1),
// so the rest faults 2 MiB at a time. It costs a process ~0.1 ms and a few MB more resident
// at most.
//
// Where the system gives no huge pages (transparent_hugepage "never", a kernel without them or
// without MADV_COLLAPSE) the calls fail or change nothing, and the heap stays as it was. So does
// a process whose GODEBUG has disablethp=1 (Go's own switch against huge pages).
package earlyheap

import (
	"strconv"
	"strings"
)

// Readied is what the init did, for tests and for the curious: the range of the heap it
// advised for huge pages (from Chunk to End: the chunk the probe is in, and the one before
// where the heap began there), whether the advice was taken, and the 2 MiB pages of it that
// were in use and were collapsed into huge pages.
var Readied struct {
	Chunk, End uintptr
	Advised    bool
	Collapsed  []uintptr
}

// refused is whether the process's GODEBUG turns Go's huge pages off (disablethp=1): its last
// valid setting of it wins, as in the runtime.
func refused(godebug string) bool {
	off := false
	for _, setting := range strings.Split(godebug, ",") {
		value, ok := strings.CutPrefix(setting, "disablethp=")
		if n, err := strconv.Atoi(value); ok && err == nil {
			off = n != 0 // a value that is no number is ignored, as by the runtime
		}
	}
	return off
}
