package runner

import (
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

// progress counts the calls the script has been given, sends events in the order they happened,
// and publishes the run's status for readers. It has locks of its own: it is called while the
// runner's or the replay's is held.
type progress struct {
	r       *runner
	onEvent func(Event)
	kick    chan struct{}

	mu     sync.Mutex
	counts store.Counts
	outbox []Event // call_ended events not sent yet

	sendMu sync.Mutex // keeps events in the order they were queued
}

func newProgress(r *runner, onEvent func(Event)) *progress {
	return &progress{r: r, onEvent: onEvent, kick: make(chan struct{}, 1), counts: store.Counts{}}
}

// callEnded counts a call the script was given and queues its event; flush sends it.
func (p *progress) callEnded(e Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts[e.Status]++
	if p.onEvent != nil {
		p.outbox = append(p.outbox, e)
	}
}

// flush sends the events queued, in the order they were queued.
func (p *progress) flush() {
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

// event sends an event at once.
func (p *progress) event(e Event) {
	if p.onEvent == nil {
		return
	}
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	p.send(e)
}

func (p *progress) send(e Event) {
	r := p.r
	e.Run = r.id
	r.mu.Lock()
	e.InFlight, e.Tokens = len(r.inflight), r.spent
	r.mu.Unlock()
	p.mu.Lock()
	e.Calls = p.counts.Clone()
	p.mu.Unlock()
	p.onEvent(e)
}

// publishSoon asks for the status to be published now rather than at the next tick.
func (p *progress) publishSoon() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// publishLoop publishes the run's status whenever it changed, at most five times a second; the
// journal, not what is published, is the record.
func (p *progress) publishLoop() (stop func()) {
	last := p.now(store.StateRunning)
	p.r.lease.Publish(last)
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
				p.r.lease.Publish(st)
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
func (p *progress) now(state store.State) *store.Status {
	r := p.r
	st := &store.Status{
		Run: r.id, State: state, Workflow: r.spec.Workflow, Backend: r.backend.Name(), Started: r.spec.CreatedAt,
		Replaying: r.replay.Replaying(), PID: pid, LastSeq: r.j.LastSeq(), Updated: time.Now().UTC(),
		Result: []byte("null"),
	}
	r.mu.Lock()
	st.InFlight, st.Tokens = len(r.inflight), r.spent
	if r.paused && state == store.StateRunning {
		st.State, st.Paused = store.StatePaused, &journal.Paused{Limit: true}
	}
	if pending := r.book.Pending(); len(pending) > 0 {
		st.Decisions = pending
		if len(r.inflight) == 0 && state == store.StateRunning {
			st.State = store.StateWaitingDecision
		}
	}
	r.mu.Unlock()
	p.mu.Lock()
	st.Calls = p.counts.Clone()
	p.mu.Unlock()
	return st
}

// publishEnded publishes the run's end and returns it.
func (p *progress) publishEnded(end *store.Status) *store.Status {
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
	p.r.lease.Publish(st)
	return st
}

// publishStopped says why the process stopped without ending the run, for status to show.
func (p *progress) publishStopped(err error) {
	st := p.now(store.StateStopped)
	e, ok := errs.As(err)
	if !ok {
		e = errs.New(errs.CapabilityUnavailable, "%s", err.Error()).Because("lifecycle", "process_stopped", errs.Stopped, errs.Uncertain)
	}
	st.Error = journal.RunErrorOf(e, "")
	p.r.lease.Publish(st)
}
