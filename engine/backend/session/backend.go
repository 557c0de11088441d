// Package session is the session backend: a run's calls taken by role subagents of the owner's
// Codex session. crw starts no thread and no turn: each turn is a step it publishes on the run's
// step bus (package bus); the owner spawns a subagent for it (or sends a repair to the call's
// open one) and reports it with crw flow dispatched; the run binds the subagent once the host
// (package host) shows it is the owner's child, carries the step's marker and runs the role's
// pair (bind.go), reads its answer from the host until its turn ends or its attempt is lost
// (harvest.go; a lost attempt's step is published again, step.go), and closes it when the call
// has its terminal row. Its wakes of the owner are package wake's; what crw flow next answers
// the owner is package nextview's. docs/session-backend.md tells it for a user.
package session

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/pull"
	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/host"
	"github.com/crw-dev/crw/engine/backend/session/wake"
	"github.com/crw-dev/crw/journal"
)

// Name is the backend's name in the journal.
const Name = "session"

// Config is one process's session backend.
type Config struct {
	Run   string
	Owner string // the owner thread
	Host  host.Host
	Dir   string            // the run's folder: the step bus and the calls' directories
	Env   map[string]string // the run's recorded environment (TMPDIR, tool entries), for the packets' tools section
	// Poll is how often a waiting step looks at the inbox and a bound turn at the host
	// (default 250 ms); every LookupEvery polls a waiting step looks its marker up on the host
	// (default 8).
	Poll        time.Duration
	LookupEvery int
	// InterruptWait bounds how long an interrupted turn is read until it ends (default 30 s).
	InterruptWait time.Duration
	// LostAfter is how long a subagent the host shows as gone may keep its marker turn
	// unchanged before its attempt is lost (default 10 minutes).
	LostAfter time.Duration
	// PrivateHost: the host is an app server of crw's own that reads the owner's threads from
	// disk, where a subagent still running reads notLoaded with its turn interrupted, a closed
	// one reads the same, and one not yet written reads unknown. So there a gone status or an
	// interrupted turn is no evidence: only LostAfter without progress (its rollout growing
	// counts) decides a lost attempt, an unknown subagent is asked again, and a close step is
	// taken back once crw flow next has handed it out.
	PrivateHost bool
	Warn        func(reason, detail string)
	// Report journals an event of the run that belongs to no call's turn (a wake, an
	// escalation).
	Report func(backend.Event)
	// Process is this process's place among the run's processes (1 for the first): the wake
	// ids of a later process are its own.
	Process int
	// Wake times the owner's wakes.
	Wake wake.Config
	// Ledger reads the spawn hook's ledger of the owner (nil: none): after a restart, a step
	// the marker search does not find is looked for by the spawn call its ledger line names.
	Ledger func(owner string) ([]LedgerLine, error)
	// Bindings is the state folder's flow-bound folder ("": none), whose owner bindings are
	// shared state for the trace isolation digests.
	Bindings string
	// Binding, when not nil, is the owner's binding to the run that the process holds
	// (lifecycle.go): bound again once its started row is durable, let go once the run ends.
	Binding *Binding
}

// LedgerLine is what the session backend reads of a spawn hook's ledger line: the step's
// marker it names and the owner's tool call.
type LedgerLine struct {
	Op        string
	ToolUseID string
}

// Backend runs turns as steps for the owner.
type Backend struct {
	cfg Config
	bus bus.Bus

	mu      sync.Mutex
	waiting map[string]chan bus.Report // marker → the step waiting for its report
	bound   map[string]binding         // marker → its subagent, for the open calls' bound steps
	closing map[bus.StepFile]bool      // close steps published, until the host shows their subagent closed
	closed  context.Context            // ends when the backend closes: its steps stop where they are
	stop    context.CancelFunc
	// The calls' Run loops under way, which Close waits for.
	runsMu     sync.Mutex
	runs       int
	runsClosed bool
	drained    chan struct{}
	done       chan struct{}
	// The owner's checkout, read once (OutsideCheckout).
	ownerTop    sync.Once
	ownerTopDir string
}

// New starts a session backend: it answers the inbox until Close.
func New(cfg Config) *Backend {
	if cfg.Poll <= 0 {
		cfg.Poll = 250 * time.Millisecond
	}
	if cfg.LookupEvery <= 0 {
		cfg.LookupEvery = 8
	}
	if cfg.LostAfter <= 0 {
		cfg.LostAfter = 10 * time.Minute
	}
	if cfg.InterruptWait <= 0 {
		cfg.InterruptWait = 30 * time.Second
	}
	if cfg.Warn == nil {
		cfg.Warn = func(string, string) {}
	}
	if cfg.Report == nil {
		cfg.Report = func(backend.Event) {}
	}
	cfg.Wake.Defaults()
	ctx, stop := context.WithCancel(context.Background())
	b := &Backend{cfg: cfg, bus: bus.Bus{Dir: cfg.Dir}, waiting: map[string]chan bus.Report{}, bound: map[string]binding{}, closing: map[bus.StepFile]bool{}, closed: ctx, stop: stop, done: make(chan struct{})}
	// The live index as this process writes it; a step it cannot make visible is retried
	// by the step itself.
	_ = b.bus.Reindex()
	go b.answerInbox(ctx)
	return b
}

// Name implements backend.Backend.
func (b *Backend) Name() string { return Name }

// Close implements backend.Backend.
func (b *Backend) Close() error {
	b.stop()
	<-b.done
	// The calls' loops see the backend closed at their next poll; one in the middle of writing
	// a step finishes it first. Waited for a while, so nothing writes in the run's folder once
	// Close returns; a loop blocked on the host is let go by the host's Close.
	b.runsMu.Lock()
	b.runsClosed = true
	var drained chan struct{}
	if b.runs > 0 {
		drained = make(chan struct{})
		b.drained = drained
	}
	b.runsMu.Unlock()
	if drained != nil {
		select {
		case <-drained:
		case <-time.After(5 * time.Second):
		}
	}
	return b.cfg.Host.Close()
}

// answerInbox routes each report to the step it names, and answers the ones no step here
// waits for: a report for a step that is not published (it ended, or never was) is told close; one for another run is
// refused; one for a step whose file is still published waits (a resumed call will take it).
func (b *Backend) answerInbox(ctx context.Context) {
	defer close(b.done)
	t := time.NewTicker(b.cfg.Poll)
	defer t.Stop()
	if steps, _, err := b.bus.Steps(); err == nil {
		b.mu.Lock()
		for _, st := range steps { // an earlier process's, not yet retracted
			if st.Action == bus.ActionClose {
				b.closing[st] = true
			}
		}
		b.mu.Unlock()
	}
	w := wake.New(wake.Owner{Run: b.cfg.Run, Thread: b.cfg.Owner, Dir: b.cfg.Dir, Host: b.cfg.Host, PrivateHost: b.cfg.PrivateHost,
		Process: b.cfg.Process, Report: b.cfg.Report}, b.cfg.Wake)
	for polls := 1; ; polls++ {
		reports, _ := b.bus.Inbox()
		for _, r := range reports {
			b.route(r)
		}
		w.Look(ctx, b.waitingMarkers)
		if polls%b.cfg.LookupEvery == 0 {
			b.sweepCloses(ctx)
			w.Follow(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// waitingMarkers are the markers of the steps waiting for the owner, sorted: a step whose
// subagent is bound waits for that subagent's answer, not for the owner, and wakes no one.
func (b *Backend) waitingMarkers() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.waiting))
	for m := range b.waiting {
		if _, bound := b.bound[m]; !bound {
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

func (b *Backend) route(r bus.Report) {
	marker := r.Marker()
	b.mu.Lock()
	ch, waiting := b.waiting[marker]
	binding, bound := b.bound[marker]
	b.mu.Unlock()
	switch {
	case r.HandedClose:
		// crw flow next handed the close step out: on a host that cannot show the subagent
		// closed, that is when it is taken back; elsewhere the host decides.
		if r.Run == b.cfg.Run && b.cfg.PrivateHost && bus.ValidName(r.Call) && bus.ValidName(r.Agent) {
			st := bus.StepFile{Call: r.Call, Attempt: r.Attempt, Action: bus.ActionClose, AgentID: r.Agent}
			b.bus.RetractClose(st.Call, st.Attempt, st.AgentID)
			b.mu.Lock()
			delete(b.closing, st)
			b.mu.Unlock()
		}
		b.bus.Drop(r)
	case r.Run != b.cfg.Run:
		_ = b.bus.Answer(r, bus.Reply{Reply: bus.ReplyRefused, Marker: marker, Agent: r.Agent, Detail: "the report names another run"})
	case bound && binding.agent == r.Agent:
		// Bound already, by its marker on the host or an earlier report.
		_ = b.bus.Answer(r, bus.Reply{Reply: bus.ReplyBound, Marker: marker, Agent: r.Agent, Detail: "bound already"})
	case bound && binding.ended:
		// The step's turn ended; its call lets the binding go once its end is durable.
		_ = b.bus.Answer(r, bus.Reply{Reply: bus.ReplyClose, Marker: marker, Agent: r.Agent, Detail: b.bus.CloseDetail(r)})
	case bound:
		_ = b.bus.Answer(r, bus.Reply{Reply: bus.ReplyClose, Marker: marker, Agent: r.Agent, Detail: secondSubagent})
	case waiting:
		select {
		case ch <- r:
		default: // the step is busy with another report: this one waits for the next poll
		}
	case !b.bus.Published(r.Call, r.K, r.Attempt):
		_ = b.bus.Answer(r, bus.Reply{Reply: bus.ReplyClose, Marker: marker, Agent: r.Agent, Detail: b.bus.CloseDetail(r)})
	}
}

// secondSubagent is the detail of a close reply to a report of a second subagent for an attempt.
const secondSubagent = "the attempt has its subagent already (a second subagent for it): close this one"

// Run implements backend.Backend: publish, bind, harvest. Its recorder is the engine's
// pull.Recorder: with any other, nothing is published (Unavailable).
func (b *Backend) Run(ctx context.Context, t backend.Turn, r backend.Recorder) backend.Outcome {
	rec, ok := r.(pull.Recorder)
	if !ok {
		return backend.Outcome{Status: backend.Unavailable, Cause: errors.New("the session backend reports through a pull.Recorder")}
	}
	b.runsMu.Lock()
	if b.runsClosed {
		b.runsMu.Unlock()
		return closedOutcome()
	}
	b.runs++
	b.runsMu.Unlock()
	defer func() {
		b.runsMu.Lock()
		if b.runs--; b.runs == 0 && b.drained != nil {
			close(b.drained)
			b.drained = nil
		}
		b.runsMu.Unlock()
	}()
	// The attempt is the one the step was published under, else the bound subagent's (a
	// repair on it), else the first above every earlier generation's (a paused call run again).
	p, bind := rec.Turn(), pull.BindOf(t.Thread)
	attempt := p.StepAttempts + 1
	if t.Thread.ID != "" && bind != nil && bind.Attempt > 0 {
		attempt = bind.Attempt
	}
	if p.Sent != nil && p.Sent.Attempt > 0 {
		attempt = p.Sent.Attempt
	}
	if p.Sent != nil && p.Sent.Marker == "" && p.Sent.TurnID == "" {
		// No step row: no process published this turn's step (a step's row comes first).
		t.Sent, p.Sent = nil, nil
	}
	var prior []journal.Pair
	if bind != nil {
		prior = append(prior, bind.PriorPairs...)
	}
	if t.K == 1 && bind != nil && bind.Attempt != attempt {
		prior = append(prior, journal.Pair{Model: t.Thread.Model, Effort: t.Thread.Effort})
		t.Thread = backend.Thread{} // an earlier attempt's subagent: this one has none yet
	}
	if t.Conversation != nil && t.From.ID != "" {
		from := journal.Pair{Model: t.From.Model, Effort: t.From.Effort}
		if part, differs := decidedPartDiffers(t.Call.Pair, from); differs && p.Sent == nil {
			return backend.Outcome{Status: backend.Failed, Failure: &backend.Failure{End: backend.EndRefused, Reason: "pair_refused",
				Detail: fmt.Sprintf("the continuation's %s %q is not the %q its handle's subagent ran", part, partOf(t.Call.Pair, part), partOf(from, part))}}
		}
		prior = append(prior, from)
	}
	s := &step{b: b, t: t, p: p, rec: rec, attempt: attempt, reports: make(chan bus.Report, 1), prior: prior, ran: journal.Pair{Model: t.Thread.Model, Effort: t.Thread.Effort}, note: p.Note}
	s.register(bus.Marker(t.Call.ID, t.K, attempt))
	defer s.register("")
	out := s.run(ctx)
	if out.Status == backend.Answered || out.Status == backend.Failed || out.Status == backend.Lost {
		b.endBinding(s.marker)
	}
	return out
}

// binding is a marker's subagent, and whether the step's turn under the marker has ended
// (answered, failed, or lost and spawned again): a call keeps its bindings until its end is
// durable (Done), and a report of another subagent for an ended marker is told the attempt
// ended, not that the attempt has its subagent.
type binding struct {
	agent string
	ended bool
}

func (b *Backend) setBound(marker, agent string) {
	b.mu.Lock()
	b.bound[marker] = binding{agent: agent}
	b.mu.Unlock()
	if call, _, attempt, ok := bus.ParseMarker(marker); ok {
		_ = b.bus.MarkBound(call, attempt, agent)
	}
}

// endBinding marks the marker's binding, if any, as its step's turn having ended.
func (b *Backend) endBinding(marker string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bd, ok := b.bound[marker]; ok {
		bd.ended = true
		b.bound[marker] = bd
	}
}

// sweepCloses retracts the close steps whose subagent the host shows closed (notLoaded, or
// unknown to it), so crw flow next hands out each close until the owner has made it. A host
// that cannot be read retracts nothing.
func (b *Backend) sweepCloses(ctx context.Context) {
	if b.cfg.PrivateHost {
		return // it cannot show a subagent closed: crw flow next's notes take the close steps back
	}
	b.mu.Lock()
	var pending []bus.StepFile
	for st := range b.closing {
		pending = append(pending, st)
	}
	b.mu.Unlock()
	for _, st := range pending {
		th, err := b.cfg.Host.ReadThread(ctx, st.AgentID)
		if errors.Is(err, host.ErrUnknownThread) || err == nil && th.Status == "notLoaded" {
			b.bus.RetractClose(st.Call, st.Attempt, st.AgentID)
			b.mu.Lock()
			delete(b.closing, st)
			b.mu.Unlock()
		}
	}
}

// closeStep publishes a close step for a subagent and watches it until the owner closes it.
func (b *Backend) closeStep(call string, attempt int, agent string) error {
	if err := b.bus.CloseAgent(call, attempt, agent); err != nil {
		return err
	}
	b.mu.Lock()
	b.closing[bus.StepFile{Call: call, Attempt: attempt, Action: bus.ActionClose, AgentID: agent}] = true
	b.mu.Unlock()
	return nil
}

// Done implements backend.Backend: the call's subagent is closed (a close step).
func (b *Backend) Done(call backend.Call, th backend.Thread) {
	b.mu.Lock()
	for marker := range b.bound {
		if c, _, _, _ := bus.ParseMarker(marker); c == call.ID {
			delete(b.bound, marker)
		}
	}
	b.mu.Unlock()
	b.bus.Unbind(call.ID, 0)
	attempt := 1
	if bind := pull.BindOf(th); bind != nil && bind.Attempt > 0 {
		attempt = bind.Attempt
	}
	if err := b.closeStep(call.ID, attempt, th.ID); err != nil {
		b.cfg.Warn("step_unwritten", "the close step of "+call.ID+" could not be written")
	}
}
