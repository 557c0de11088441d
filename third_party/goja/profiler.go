package goja

// crw's goja has no execution-time profiler (see CRW.md): the pinned release's profiler.go
// links github.com/google/pprof/profile, whose package initialization (regular expressions
// compiled for legacy profile formats) every crw process paid at its start, ~1 ms. What the
// VM reads of the profiler is kept; StartProfile refuses.

import (
	"errors"
	"io"
	"time"
)

const profMaxStackDepth = 64

const (
	profReqNone int32 = iota
	profReqDoSample
	profReqSampleReady
	profReqStop
)

type _globalProfiler struct {
	p profiler

	enabled int32 // never set: no VM runs with the profiler
}

var globalProfiler _globalProfiler

type profTracker struct {
	req, finished int32
	start, stop   time.Time
	numFrames     int
	frames        [profMaxStackDepth]StackFrame
}

type profiler struct{}

// registerVm gives a tracker that asks its VM to stop tracing at once.
func (p *profiler) registerVm() *profTracker {
	return &profTracker{req: profReqStop}
}

// StartProfile is refused: crw's goja has no profiler.
func StartProfile(io.Writer) error {
	return errors.New("goja: this build has no profiler")
}

// StopProfile does nothing: no profile was started.
func StopProfile() {}
