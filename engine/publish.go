package engine

import (
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
)

// publishLoop writes state.json whenever something changed, at most five times a second; the
// journal, not this file, is the record.
func (r *run) publishLoop() (stop func()) {
	r.publish("running", "")
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-r.publishKick:
				r.mu.Lock()
				r.dirty = true
				r.mu.Unlock()
			case <-t.C:
			}
			r.mu.Lock()
			dirty := r.dirty
			r.dirty = false
			paused := r.paused
			r.mu.Unlock()
			if dirty {
				state := "running"
				if paused {
					state = "paused"
				}
				r.publish(state, "")
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-finished
		})
	}
}

func (r *run) stateNow(state, status string) RunState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return RunState{
		Schema: StateSchema, Run: r.id, State: state, Status: status, PID: os.Getpid(),
		Replaying: r.recordPendingLocked(),
		Workflow:  r.spec.Workflow, Backend: r.backend.Name(), InFlight: len(r.inflight),
		Calls: r.countsCopy(), Tokens: r.spent, LastSeq: r.j.LastSeq(), StartedAt: r.started,
		UpdatedAt: time.Now().UTC(),
	}
}

// publishSoon asks for state.json to be written now rather than at the next tick.
func (r *run) publishSoon() {
	select {
	case r.publishKick <- struct{}{}:
	default:
	}
}

func (r *run) publish(state, status string) {
	s := r.stateNow(state, status)
	_ = publishFile(filepath.Join(r.dir, StateFile), s)
}

func (r *run) publishEnded(res *Result) {
	state := "ended"
	if res.Status == RunPaused {
		state = "paused" // resumable: it waits for the limit to pass
	}
	s := r.stateNow(state, res.Status)
	s.Result = res.Result
	s.Error = res.Error
	_ = publishFile(filepath.Join(r.dir, StateFile), s)
}

// publishStopped says why the process stopped without ending the run, for status to show.
func (r *run) publishStopped(err error) {
	s := r.stateNow("stopped", "")
	s.Error = &journal.RunError{Message: err.Error()}
	if e, ok := errs.As(err); ok {
		s.Error.Code, s.Error.Reason = string(e.Code), e.Reason()
	}
	_ = publishFile(filepath.Join(r.dir, StateFile), s)
}
