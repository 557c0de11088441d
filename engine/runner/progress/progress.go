// Package progress is a live run's progress: it counts the calls the script has been given,
// sends the run's events in the order they happened, and publishes the run's status for
// readers. The journal, not what it publishes, is the record.
package progress

import (
	"os"
	"sync"
	"time"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// EventKind is what an Event reports.
type EventKind string

// Kinds of events.
const (
	EventStarted     EventKind = "started"
	EventCallStarted EventKind = "call_started"
	EventCallEnded   EventKind = "call_ended"
	EventEnded       EventKind = "ended"
	EventProgress    EventKind = "progress" // a reader's look at a run another process holds
	EventWarning     EventKind = "warning"  // a warning row of the run: Reason, Detail
)

// Event is one step of live progress.
type Event struct {
	Kind     EventKind
	Run      string
	Call     string
	Role     string
	Node     string
	Status   journal.CallStatus
	Reason   string
	Detail   string
	Replayed bool // the call's outcome came from the journal
	Calls    store.Counts
	InFlight int
	Tokens   journal.Tokens
}

// Snapshot is what the run's process knows of it now: its Source's answer.
type Snapshot struct {
	InFlight  int
	Tokens    journal.Tokens
	Paused    bool                      // by a usage or rate limit
	Decisions []journal.PendingDecision // the decisions and verdicts the script waits for
	Replaying bool
	LastSeq   uint64
}

// Source is the run's process as its progress sees it. It must not call the Progress back.
type Source interface {
	Snapshot() Snapshot
}

// Config is what a Progress is made of.
type Config struct {
	Run, Workflow, Backend string
	Started                time.Time
	Source                 Source
	Publish                func(*store.Status) // the lease's: what readers see of the run
	OnEvent                func(Event)         // nil sends no events
}

// Progress counts the calls the script has been given, sends events in the order they happened,
// and publishes the run's status for readers. It has locks of its own: it is called while the
// runner's or the replay's is held.
type Progress struct {
	cfg     Config
	onEvent func(Event)
	kick    chan struct{}

	mu     sync.Mutex
	counts store.Counts
	outbox []Event // call_ended events not sent yet

	sendMu sync.Mutex // keeps events in the order they were queued
}

// New returns the progress of a run's process.
func New(cfg Config) *Progress {
	return &Progress{cfg: cfg, onEvent: cfg.OnEvent, kick: make(chan struct{}, 1), counts: store.Counts{}}
}

// CallEnded counts a call the script was given and queues its event; Flush sends it.
func (p *Progress) CallEnded(e Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts[e.Status]++
	if p.onEvent != nil {
		p.outbox = append(p.outbox, e)
	}
}

// Flush sends the events queued, in the order they were queued.
func (p *Progress) Flush() {
	if p.onEvent == nil {
		return
	}
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	p.mu.Lock()
	out := p.outbox
	p.outbox = nil
	p.mu.Unlock()
	for _, e := range out {
		p.send(e)
	}
}

// Event sends an event at once.
func (p *Progress) Event(e Event) {
	if p.onEvent == nil {
		return
	}
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	p.send(e)
}

func (p *Progress) send(e Event) {
	e.Run = p.cfg.Run
	now := p.cfg.Source.Snapshot()
	e.InFlight, e.Tokens = now.InFlight, now.Tokens
	p.mu.Lock()
	e.Calls = p.counts.Clone()
	p.mu.Unlock()
	p.onEvent(e)
}

// PublishSoon asks for the status to be published now rather than at the next tick.
func (p *Progress) PublishSoon() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// PublishLoop publishes the run's status whenever it changed, at most five times a second; the
// journal, not what is published, is the record.
func (p *Progress) PublishLoop() (stop func()) {
	last := p.now(store.StateRunning)
	p.cfg.Publish(last)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			forced := false
			select {
			case <-done:
				return
			case <-p.kick:
				forced = true
			case <-t.C:
			}
			st := p.now(store.StateRunning)
			if forced || changed(last, st) {
				p.cfg.Publish(st)
				last = st
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

// changed reports whether a reader would see anything new in b.
func changed(a, b *store.Status) bool {
	return a.State != b.State || a.InFlight != b.InFlight || a.LastSeq != b.LastSeq || a.Replaying != b.Replaying ||
		a.Tokens != b.Tokens || a.Calls.Total() != b.Calls.Total()
}

// now is the run's status as this process sees it.
func (p *Progress) now(state store.State) *store.Status {
	now := p.cfg.Source.Snapshot()
	st := &store.Status{
		Run: p.cfg.Run, State: state, Workflow: p.cfg.Workflow, Backend: p.cfg.Backend, Started: p.cfg.Started,
		Replaying: now.Replaying, PID: pid, LastSeq: now.LastSeq, Updated: time.Now().UTC(),
		Result: []byte("null"), InFlight: now.InFlight, Tokens: now.Tokens,
	}
	if now.Paused && state == store.StateRunning {
		st.State, st.Paused = store.StatePaused, &journal.Paused{Limit: true}
	}
	if len(now.Decisions) > 0 {
		st.Decisions = now.Decisions
		if now.InFlight == 0 && state == store.StateRunning {
			st.State = store.StateWaitingDecision
		}
	}
	p.mu.Lock()
	st.Calls = p.counts.Clone()
	p.mu.Unlock()
	return st
}

// pid is this process's id, for the status it publishes.
var pid = os.Getpid()

// PublishEnded publishes the run's end and returns it.
func (p *Progress) PublishEnded(end *store.Status) *store.Status {
	state := store.StateEnded
	switch end.Status {
	case store.RunPaused:
		state = store.StatePaused // resumable: it waits for the limit to pass
	case store.RunWaitingDecision:
		state = store.StateWaitingDecision // resumable: it waits for an answer
	}
	st := p.now(state)
	st.Status, st.Error, st.Replaying, st.Paused = end.Status, end.Error, false, end.Paused
	if end.Result != nil {
		st.Result = end.Result
	}
	p.cfg.Publish(st)
	return st
}

// PublishStopped says why the process stopped without ending the run, for status to show.
func (p *Progress) PublishStopped(err error) {
	st := p.now(store.StateStopped)
	e, ok := errs.As(err)
	if !ok {
		e = errs.New(errs.CapabilityUnavailable, "%s", err.Error()).Because("lifecycle", "process_stopped", errs.Stopped, errs.Uncertain)
	}
	st.Error = journal.RunErrorOf(e, "")
	p.cfg.Publish(st)
}
