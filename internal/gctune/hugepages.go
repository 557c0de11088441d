package gctune

import "sync"

// HugeRegion is what LargeHeap readies for huge pages: the heap Tune lets a process grow to
// while its live heap is small.
const HugeRegion = ceiling

// LargeHeap readies the heap of a process that is about to replay or run a workflow for
// transparent huge pages, where the system gives them to a process that asks (Linux's
// transparent_hugepage "madvise" or "always"; elsewhere it does nothing). A replay's heap grows
// to tens of MiB within its first tenth of a second, and on a virtual machine each 4 KiB page
// touched for the first time is a fault of ~15 µs, which 2 MiB pages take 512 at a time: a
// 10,000-call shadow replay went from ~0.31 s to ~0.26 s. Go's heap asks for none. It costs a
// process ~1 ms and a collection of a heap of one object, in the background, so the commands
// that print a run's state do without it; the resident memory grows in 2 MiB steps (by itself
// ~5 MB more at 10,000 calls, ~1 MB at 100,000). Calls after the first do nothing.
//
// Where the advice was taken, the collector's target may then rise to HugePercent
// (PercentFor); where it was not (another system, no huge pages), it stays as it was: garbage
// let gather in 4 KiB pages costs their faults and gains nothing.
func LargeHeap() {
	largeHeap.Do(func() {
		// No retarget (after a collection, by Tune's sentinel) may set the collector's target
		// while the region is readied: adviseHugePages holds collections off meanwhile.
		retargetMu.Lock()
		hugeHeap.Store(adviseHugePages(HugeRegion))
		retargetMu.Unlock()
		if tuning.Load() {
			// Now, not at the end of the next collection: the target the collection that
			// let the region go left was set without it (or not at all, its sentinel still
			// being finalized from the one before).
			retarget()
		}
	})
}

var largeHeap sync.Once
