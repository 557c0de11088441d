// Package earlyheap readies the heap a crw process starts in for transparent huge pages while
// its packages are being initialized: imported by the command alone, for the side effect of its
// init.
//
// A crw process's packages allocate ~1.5 MB as they are initialized (goja, esbuild, the etcd
// client's protobuf descriptors, the MCP SDK…) and its runtime more, all of it in the first 4 MiB
// the runtime maps of its heap. Each 4 KiB page of it touched for the first time is a fault, and
// on a virtual machine a fault costs ~10-25 µs: ~500 of them were ~7 ms of the ~30 ms of
// `crw version` or `crw flow status`. Go's heap asks for no huge pages; this package's init,
// early among the process's (it imports nothing that needs more than the runtime and syscall,
// and packages are initialized in the order of their import paths once what they import is),
// advises that first chunk MADV_HUGEPAGE and collapses its 2 MiB pages that are in use already
// (MADV_COLLAPSE, Linux 6.1), so the rest of it faults 2 MiB at a time. It costs a process
// ~0.1 ms and ~2 MB more resident at most.
//
// Where the system gives no huge pages (transparent_hugepage "never", a kernel without them or
// without MADV_COLLAPSE) the calls fail or change nothing, and the heap stays as it was. So does
// a process whose GODEBUG has disablethp=1 (Go's own switch against huge pages).
package earlyheap

import (
	"strconv"
	"strings"
)

// Readied is what the init did, for tests and for the curious: the first chunk's start, whether
// it was advised, and whether its pages in use (from Chunk to InUse) were collapsed into huge
// pages.
var Readied struct {
	Chunk     uintptr
	InUse     uintptr
	Advised   bool
	Collapsed bool
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
