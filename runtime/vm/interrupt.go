package vm

import (
	"context"
	"time"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/runtime/limits"
	"github.com/crw-dev/crw/runtime/natives"
)

// The limits are package limits'; these are their names as the engine uses them.

// Limits bound what a workflow may take of the host. A zero field takes its default.
type Limits = limits.Limits

// LimitError is a workflow stopped by one of its Limits. A run that meets one ends failed with
// code budget_exhausted and the limit's reason.
type LimitError = limits.LimitError

// The defaults protect the host: a runaway recursion, a growing structure or a module that
// never finishes loading ends the run instead of the machine.
const (
	DefaultStackDepth = limits.DefaultStackDepth
	DefaultHeapBytes  = limits.DefaultHeapBytes
	DefaultLoadTime   = limits.DefaultLoadTime
)

// The reasons of a LimitError, and of the run's error it becomes.
const (
	ReasonStackDepth = limits.ReasonStackDepth
	ReasonHeapLimit  = limits.ReasonHeapLimit
	ReasonLoadTime   = limits.ReasonLoadTime
	ReasonRegExpTime = limits.ReasonRegExpTime
)

// HeapSamplePeriod is how often the heap watch samples the Go heap.
const HeapSamplePeriod = limits.HeapSamplePeriod

// Bounds of the natives' guards (package natives).
const (
	MaxArrayLength    = natives.MaxArrayLength
	MaxStringLength   = natives.MaxStringLength
	MaxStringifyDepth = natives.MaxStringifyDepth
	MaxRegExpNesting  = natives.MaxRegExpNesting
	RegExpSearchTime  = natives.RegExpSearchTime
)

// limitScriptError is how a run records a limit passed.
func limitScriptError(e *LimitError) *ScriptError {
	return &ScriptError{Message: e.Message, Code: string(errs.BudgetExhausted), Reason: e.Reason}
}

// guard interrupts the VM for a limit or when ctx ends, while the script runs: Run's loop and
// New's module evaluation. The cause it interrupts with is what cause returns.
type guard struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   []func()
}

func (v *VM) guard(parent context.Context, timeout time.Duration, timeoutErr error) *guard {
	ctx, cancel := context.WithCancelCause(parent)
	g := &guard{ctx: ctx, cancel: cancel}
	rt := v.rt
	stop := context.AfterFunc(ctx, func() {
		v.natives.Stopping(true)
		rt.Interrupt(g.cause())
	})
	g.done = append(g.done, func() { stop() })
	v.natives.OnLimit(func(le *LimitError) {
		cancel(le)
		v.natives.Stopping(true)
		rt.Interrupt(g.cause())
	})
	g.done = append(g.done, func() { v.natives.OnLimit(nil) })
	g.done = append(g.done, limits.HeapWatch(v.limits.HeapBytes, cancel))
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() { cancel(timeoutErr) })
		g.done = append(g.done, func() { t.Stop() })
	}
	return g
}

// cause is why the script was interrupted: a LimitError, or the parent context's error.
func (g *guard) cause() error {
	if le, ok := context.Cause(g.ctx).(*LimitError); ok {
		return le
	}
	return g.ctx.Err()
}

// limit is the LimitError that stopped the script, if one did.
func (g *guard) limit() *LimitError {
	le, _ := context.Cause(g.ctx).(*LimitError)
	return le
}

func (g *guard) release() {
	for _, f := range g.done {
		f()
	}
	g.cancel(nil)
}
