// Package gctune is how a crw process tunes Go's garbage collector: a run's live heap is small
// and nearly all it allocates dies young, so the collector's target is raised while the live heap
// is small and brought down as it grows. The command sets it once at start; benchmarks that
// stand for crw's process set it too.
package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// ProcessPercent is the garbage collector's target in crw's process while its live heap is
// small. A run's live heap is small and nearly all it allocates (parsed rows, call results) dies
// young, so collecting at 100% growth spends more of a replay in the collector than it needs.
// A higher target is not faster either: memory the heap has not touched yet costs a page fault
// each 4 KiB (~10 µs on the machines crw is measured on), and a shadow replay of 10,000 calls
// took 11% longer at 300% than at 200%, a fresh run no less.
const ProcessPercent = 200

// ceiling is the heap Tune lets a process grow to while its live heap is under two thirds of
// it: the collector's target falls from ProcessPercent as the live heap grows, so that live
// heap and garbage together stay at ceiling. A shadow replay of 100,000 recorded calls (~30 MB
// live) peaks at ~90 MB resident so, 7% slower than at 64 MiB of garbage whatever the live
// heap (145 MB), and at a ceiling of 56 MiB at ~97 MB; at 200% it grew to 180 MB.
const ceiling = 48 << 20

// MinPercent is the collector's target once the live heap is two thirds of ceiling or more: the
// heap grows with what is live, by half of it.
const MinPercent = 50

// HugePercent is the collector's highest target once LargeHeap readied the heap for huge
// pages: filling the first ceiling bytes of heap then costs a fault each 2 MiB, not each
// 4 KiB, so a small live heap lets garbage gather up to ceiling before a collection rather
// than to twice itself. A 10,000-call shadow replay collects 7 times, not 12, and takes ~6%
// less time, ~18 MB more resident (its heap grows to ceiling); a live run of 2,000 calls,
// which gains nothing, ~8 MB more. At 1000% the live run took 30 MB more for no more gain.
const HugePercent = 400

// PercentFor is the collector's target for a live heap of live bytes: as high as most
// (ProcessPercent, or HugePercent in a heap readied for huge pages) while live heap and
// garbage stay under ceiling, less as the live heap grows, never under MinPercent.
func PercentFor(live uint64, most int) int {
	if live == 0 {
		return most
	}
	if live >= ceiling {
		return MinPercent
	}
	return int(min(max(100*(ceiling-live)/live, MinPercent), uint64(most)))
}

// hugeHeap is whether LargeHeap readied this process's heap for huge pages.
var hugeHeap atomic.Bool

// mostPercent is PercentFor's most in this process.
func mostPercent() int {
	if hugeHeap.Load() {
		return HugePercent
	}
	return ProcessPercent
}

// Tune sets the process's GC target after every collection from the live heap it left
// (PercentFor), for as long as the process runs. A GOGC of the user's is left as it is.
// Calls after the first do nothing.
func Tune() { tune.Do(tuneOnce) }

var tune sync.Once

func tuneOnce() {
	if os.Getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(ProcessPercent)
	tuning.Store(true)
	var watch func(*gcSentinel)
	watch = func(s *gcSentinel) {
		retarget()
		runtime.SetFinalizer(s, watch) // again after the next collection
	}
	runtime.SetFinalizer(&gcSentinel{}, watch)
}

// tuning is whether Tune sets the collector's target (no GOGC of the user's).
var tuning atomic.Bool

// retarget sets the collector's target from the live heap the last collection left
// (PercentFor). The sentinel's finalizer and LargeHeap both call it, one at a time, so that
// the last to set it reads the heap's state last.
func retarget() {
	retargetMu.Lock()
	defer retargetMu.Unlock()
	metrics.Read(liveSample)
	debug.SetGCPercent(PercentFor(liveSample[0].Value.Uint64(), mostPercent()))
}

var (
	retargetMu sync.Mutex
	liveSample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
)

// gcSentinel is an object nothing refers to: its finalizer runs after each collection.
type gcSentinel struct{ _ [16]byte } // 16 bytes: the tiny allocator's objects may never be finalized
