// Package limits is what a workflow may take of the host (its call stack, its heap, the time
// its modules take to load, a regular expression's search) and the error of passing one; the
// heap watch that measures the heap.
package limits

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/crw-dev/crw/errs"
)

// Limits bound what a workflow may take of the host. A zero field takes its default.
type Limits struct {
	// StackDepth is the deepest JS call stack: past it the script fails with a RangeError.
	StackDepth int
	// HeapBytes bounds the Go heap while the script runs (see HeapWatch for what it counts).
	HeapBytes int64
	// LoadTime bounds the evaluation of the workflow's modules.
	LoadTime time.Duration
}

// The defaults protect the host: a runaway recursion, a growing structure or a module that
// never finishes loading ends the run instead of the machine.
const (
	DefaultStackDepth = 10_000
	DefaultHeapBytes  = 2 << 30
	DefaultLoadTime   = 30 * time.Second
)

// MaxStackDepth bounds the stack depth a run may be given: a runaway recursion's cost grows
// faster than its depth (0.65 s to its RangeError at 100,000 calls, 5 s at 300,000, 57 s and
// 570 MB at 1,000,000), and past this one it would hold a process where it should end a run.
const MaxStackDepth = 100_000

// WithDefaults fills the zero fields.
func (l Limits) WithDefaults() Limits {
	if l.StackDepth <= 0 {
		l.StackDepth = DefaultStackDepth
	}
	if l.HeapBytes <= 0 {
		l.HeapBytes = DefaultHeapBytes
	}
	if l.LoadTime <= 0 {
		l.LoadTime = DefaultLoadTime
	}
	return l
}

// The reasons of a LimitError, and of the run's error it becomes.
const (
	ReasonStackDepth = "stack_depth"
	ReasonHeapLimit  = "heap_limit"
	ReasonLoadTime   = "load_time"
	ReasonRegExpTime = "regexp_time"
)

// LimitError is a workflow stopped by one of its Limits. A run that meets one ends failed with
// code budget_exhausted and the limit's reason.
type LimitError struct {
	Reason  string
	Message string
}

func (e *LimitError) Error() string { return e.Message }

// Code implements errs.Coded.
func (e *LimitError) Code() errs.Code { return errs.BudgetExhausted }

// HeapSamplePeriod is how often the heap watch samples the Go heap.
const HeapSamplePeriod = 50 * time.Millisecond

// HeapWatch calls stop once the Go heap holds more than limit bytes of live objects, until
// the returned function is called. It samples the bytes of heap objects (runtime/metrics, cheap)
// every HeapSamplePeriod; past the limit it collects garbage once and stops the script only if
// the live heap is still over. It counts the whole process's Go heap: crw's own few MiB too.
func HeapWatch(limit int64, stop func(error)) (done func()) {
	softenGC(limit)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(HeapSamplePeriod)
		defer t.Stop()
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			metrics.Read(sample)
			if int64(sample[0].Value.Uint64()) <= limit {
				continue
			}
			runtime.GC()
			metrics.Read(sample)
			if used := int64(sample[0].Value.Uint64()); used > limit {
				stop(&LimitError{Reason: ReasonHeapLimit, Message: fmt.Sprintf(
					"the workflow's heap passed its limit of %d MiB (%d MiB in use): raise --max-heap or keep less", limit>>20, used>>20)})
				return
			}
		}
	}()
	return func() {
		close(quit)
		wg.Wait()
	}
}

// softenGC makes the collector keep the whole Go heap within a quarter above the workflow's
// heap limit: with crw's GC target of 300%, garbage alone could otherwise take the process's
// memory to four times its live heap before the watchdog, which counts live objects after a
// collection, sees a limit passed. A memory limit set from GOMEMLIMIT is left as it is.
func softenGC(limit int64) {
	if os.Getenv("GOMEMLIMIT") != "" || limit <= 0 || limit > math.MaxInt64/2 {
		return
	}
	soft := limit + limit/4
	if current := debug.SetMemoryLimit(-1); current < soft {
		return // a lower limit is in place (another run of this process set it)
	}
	debug.SetMemoryLimit(soft)
}
