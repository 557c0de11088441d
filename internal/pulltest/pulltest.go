// Package pulltest is a backend of the pull kind, for tests: it shows how a backend that hands
// turns to an outside party (the session owner that runs a run's calls on role subagents) fits
// the contract next to the push backends.
//
// Each turn is published as a step on a Session's bus: the step_published row is committed
// before the step becomes visible. The Session's owner, a goroutine standing for the owner's
// Codex session, takes each step, spawns a subagent for it (or sends a repair to the call's
// open subagent) and reports the subagent's thread and turn: the bind, which the backend
// records as the call's thread_started and turn_started rows. The backend then harvests the
// turn's outcome. A turn interrupted before anybody took its step has its step retracted; one
// interrupted after the bind has its subagent's turn interrupted and waited for. When the call
// is done, the backend closes the subagent.
//
// The Session outlives any backend built on it, as the owner's session outlives crw's
// process: a resumed run finds the binds made while no process watched, harvests the turns,
// and publishes again only a step that was never taken. The subagents' turns are the fake
// backend's, so one answers file drives the fake, the App Server's mock and this backend.
package pulltest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/backend/pull"
)

// Name is the backend's name in the journal.
const Name = "pull-test"

// Step is a turn published for the owner.
type Step struct {
	Marker string // <call>/t<k>-a<attempt>: one per turn of an attempt of a call
	Call   backend.Call
	K      int
	Prompt string
	Task   string         // the call's own prompt, which the fake's answers match
	Thread backend.Thread // the call's open subagent (a repair); empty: spawn one
	From   backend.Thread // the thread a continuation carries on
}

// Bind is what the owner reports for a step it took: the subagent and the turn it started.
type Bind struct {
	Thread backend.Thread
	TurnID string
}

// Session is the owner's side: the step bus and the subagents. It is safe for concurrent use.
type Session struct {
	host *fake.Backend // runs the subagents' turns
	ctx  context.Context
	stop context.CancelFunc

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change
	steps     map[string]*entry
	published int // steps published, retracted ones included
	closed    map[string]bool
	held      map[string]bool // nodes whose steps the owner leaves waiting
	running   sync.WaitGroup
}

type entry struct {
	step      Step
	taken     bool
	retracted bool
	bound     *Bind
	outcome   *backend.Outcome
	interrupt context.CancelFunc
}

// NewSession starts an owner whose subagents answer as the fake backend would from answers
// (nil: synthesized answers) on host (nil: a host of its own).
func NewSession(answers *fake.Answers, host *fake.Host) *Session {
	ctx, stop := context.WithCancel(context.Background())
	return &Session{
		host: fake.New(answers, host), ctx: ctx, stop: stop,
		changed: make(chan struct{}), steps: map[string]*entry{}, closed: map[string]bool{}, held: map[string]bool{},
	}
}

// Hold makes the owner leave the steps of a node's calls waiting, untaken, until Release.
func (s *Session) Hold(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held[node] = true
}

// Release lets the owner take the waiting steps of a node, and those to come.
func (s *Session) Release(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, node)
	for _, e := range s.steps {
		if e.step.Call.Node == node && !e.retracted && !e.taken {
			s.startLocked(e)
		}
	}
}

// Waiting lists the markers of the steps published and not taken.
func (s *Session) Waiting() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for m, e := range s.steps {
		if !e.taken && !e.retracted {
			out = append(out, m)
		}
	}
	return out
}

// Stop ends the owner: turns still running are interrupted.
func (s *Session) Stop() {
	s.stop()
	s.running.Wait()
}

// Backend returns a backend of one process of a run, on this session.
func (s *Session) Backend() *Backend { return &Backend{s: s} }

// Descriptor registers backends on this session under Name.
func (s *Session) Descriptor() backend.Descriptor {
	return backend.Descriptor{
		Name:    Name,
		Summary: "a pull-kind backend for tests: an in-process owner takes each turn as a step",
		Open:    func(backend.Config) (backend.Backend, error) { return s.Backend(), nil },
	}
}

// Published is how many steps were published, retracted ones included.
func (s *Session) Published() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.published
}

// Closed reports whether the subagent of a thread was closed.
func (s *Session) Closed(threadID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed[threadID]
}

// notifyLocked wakes everyone waiting for a change.
func (s *Session) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// publish makes a step visible; the owner takes it at once.
func (s *Session) publish(st Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.steps[st.Marker]; e != nil && !e.retracted {
		return // still there: the owner has it
	}
	s.published++
	e := &entry{step: st}
	s.steps[st.Marker] = e
	s.notifyLocked()
	if !s.held[st.Call.Node] {
		s.startLocked(e)
	}
}

func (s *Session) startLocked(e *entry) {
	e.taken = true
	s.running.Add(1)
	go s.take(e)
}

// take is the owner taking a step: it spawns a subagent (or reuses the call's open one for a
// repair), binds it, and runs its turn.
func (s *Session) take(e *entry) {
	defer s.running.Done()
	ctx, interrupt := context.WithCancel(s.ctx)
	defer interrupt()
	st := e.step
	rec := &subagent{s: s, e: e}
	s.mu.Lock()
	if e.retracted {
		s.mu.Unlock()
		return
	}
	e.interrupt = interrupt
	s.mu.Unlock()
	out := s.host.Run(ctx, backend.Turn{Call: st.Call, K: st.K, Prompt: st.Prompt, Task: st.Task, Thread: st.Thread, From: st.From}, rec)
	s.mu.Lock()
	defer s.mu.Unlock()
	e.outcome = &out
	s.notifyLocked()
}

// subagent is the owner's view of a subagent's turn: the fake host reports its thread and turn
// to it, and the owner binds them to the step.
type subagent struct {
	s      *Session
	e      *entry
	thread backend.Thread
}

func (a *subagent) Commit() error       { return nil }
func (a *subagent) Warn(string, string) {}
func (a *subagent) Thread(th backend.Thread) {
	a.thread = th
}
func (a *subagent) Started(turnID string) {
	th := a.thread
	if th.ID == "" {
		th = a.e.step.Thread
	}
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	a.e.bound = &Bind{Thread: th, TurnID: turnID}
	a.s.notifyLocked()
}

// wait waits until cond holds of the step's entry or ctx ends; it reports whether cond held.
func (s *Session) wait(ctx context.Context, marker string, cond func(*entry) bool) bool {
	for {
		s.mu.Lock()
		e, ch := s.steps[marker], s.changed
		ok := e != nil && cond(e)
		s.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// retract takes back a step nobody bound; false when it was bound already.
func (s *Session) retract(marker string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.steps[marker]
	if e == nil || e.bound != nil {
		return e == nil
	}
	e.retracted = true
	if e.interrupt != nil {
		e.interrupt()
	}
	s.notifyLocked()
	return true
}

// lookup is what the session knows of a step: whether it is there (published and not
// retracted) and its bind.
func (s *Session) lookup(marker string) (there bool, bind *Bind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.steps[marker]
	if e == nil || e.retracted {
		return false, nil
	}
	return true, e.bound
}

// Backend is one process's side of a pull-kind run: it publishes, binds, harvests, retracts and
// closes through the Session.
type Backend struct{ s *Session }

var _ backend.Backend = (*Backend)(nil)

// Name implements backend.Backend.
func (b *Backend) Name() string { return Name }

// Close implements backend.Backend: the session lives on.
func (b *Backend) Close() error { return nil }

// Done implements backend.Backend: the call's subagent is closed.
func (b *Backend) Done(_ backend.Call, th backend.Thread) {
	if th.ID == "" {
		return
	}
	b.s.mu.Lock()
	b.s.closed[th.ID] = true
	b.s.mu.Unlock()
}

// Marker names the step of turn k of an attempt of a call.
func Marker(c backend.Call, k int) string { return fmt.Sprintf("%s/t%d-a%d", c.ID, k, c.Attempt) }

// Run implements backend.Backend: publish (or, after a restart, find) the step, wait for its
// bind, and harvest the bound turn. Its recorder is the engine's pull.Recorder.
func (b *Backend) Run(ctx context.Context, t backend.Turn, r backend.Recorder) backend.Outcome {
	rec, ok := r.(pull.Recorder)
	if !ok {
		return backend.Outcome{Status: backend.Unavailable, Cause: errors.New("pulltest reports through a pull.Recorder")}
	}
	st := Step{Marker: Marker(t.Call, t.K), Call: t.Call, K: t.K, Prompt: t.Prompt, Task: t.Task, Thread: t.Thread, From: t.From}
	if sent := rec.Turn().Sent; sent == nil || sent.Marker == "" {
		rec.Dispatched(pull.Step{Marker: st.Marker})
		if err := rec.Commit(); err != nil {
			return backend.Outcome{Status: backend.Unavailable, Cause: err}
		}
		b.s.publish(st)
	} else if there, _ := b.s.lookup(st.Marker); !there {
		// The process that published it died before the step was visible: publish it again.
		b.s.publish(st)
	}

	if !b.s.wait(ctx, st.Marker, func(e *entry) bool { return e.bound != nil }) {
		if b.s.retract(st.Marker) {
			return backend.Outcome{Status: backend.Interrupted}
		}
		// Bound as ctx ended: the turn runs, and is interrupted below.
	}
	_, bind := b.s.lookup(st.Marker)
	if t.Thread.ID != bind.Thread.ID {
		rec.Thread(bind.Thread)
	}
	if t.Sent == nil || t.Sent.TurnID == "" {
		rec.Started(bind.TurnID)
	}
	if !b.s.wait(ctx, st.Marker, func(e *entry) bool { return e.outcome != nil }) {
		b.s.mu.Lock()
		if e := b.s.steps[st.Marker]; e != nil && e.interrupt != nil {
			e.interrupt()
		}
		b.s.mu.Unlock()
		b.s.wait(context.Background(), st.Marker, func(e *entry) bool { return e.outcome != nil })
	}
	b.s.mu.Lock()
	out := *b.s.steps[st.Marker].outcome
	b.s.mu.Unlock()
	return out
}
