// Package session is the session backend: a run's calls taken by role subagents of the owner's
// Codex session. crw starts no thread and no turn: each turn is a step it publishes on the run's
// step bus (Bus); the owner spawns a subagent for it (or sends a repair to the call's open one)
// and reports it with crw flow dispatched; the run binds the subagent once the host (Host) shows
// it is the owner's child, carries the step's marker and runs the role's pair, reads its answer
// from the host, and closes it when the call has its terminal row. docs/session-backend.md
// tells it for a user.
package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/host"
	"github.com/crw-dev/crw/engine/backend/session/roles"
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
	// Flow records a row of the run that belongs to no call (session_wake, escalation).
	Flow func(row *journal.Row)
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
	bound   map[string]string          // marker → its subagent, for the open calls' bound steps
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
	if cfg.Flow == nil {
		cfg.Flow = func(*journal.Row) {}
	}
	cfg.Wake.Defaults()
	ctx, stop := context.WithCancel(context.Background())
	b := &Backend{cfg: cfg, bus: bus.Bus{Dir: cfg.Dir}, waiting: map[string]chan bus.Report{}, bound: map[string]string{}, closing: map[bus.StepFile]bool{}, closed: ctx, stop: stop, done: make(chan struct{})}
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
		Process: b.cfg.Process, Flow: b.cfg.Flow}, b.cfg.Wake)
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
	agent, bound := b.bound[marker]
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
	case bound && agent == r.Agent:
		// Bound already, by its marker on the host or an earlier report.
		_ = b.bus.Answer(r, bus.Reply{Reply: bus.ReplyBound, Marker: marker, Agent: r.Agent, Detail: "bound already"})
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

// Run implements backend.Backend: publish, bind, harvest.
func (b *Backend) Run(ctx context.Context, t backend.Turn, rec backend.Recorder) backend.Outcome {
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
	attempt := t.Call.StepAttempts + 1
	if t.Thread.ID != "" && t.Thread.Bind != nil && t.Thread.Bind.Attempt > 0 {
		attempt = t.Thread.Bind.Attempt
	}
	if t.Sent != nil && t.Sent.Marker != "" {
		if _, _, n, ok := bus.ParseMarker(t.Sent.Marker); ok {
			attempt = n
		}
	}
	if t.Sent != nil && t.Sent.Marker == "" && t.Sent.TurnID == "" {
		// No step row: no process published this turn's step (a step's row comes first).
		t.Sent = nil
	}
	var prior []journal.Pair
	if t.Thread.Bind != nil {
		prior = append(prior, t.Thread.Bind.PriorPairs...)
	}
	if t.K == 1 && t.Thread.Bind != nil && t.Thread.Bind.Attempt != attempt {
		prior = append(prior, journal.Pair{Model: t.Thread.Model, Effort: t.Thread.Effort})
		t.Thread = backend.Thread{} // an earlier attempt's subagent: this one has none yet
	}
	if t.Conversation != nil && t.From.ID != "" {
		from := journal.Pair{Model: t.From.Model, Effort: t.From.Effort}
		if part, differs := decidedPartDiffers(t.Call.Pair, from); differs && t.Sent == nil {
			return backend.Outcome{Status: backend.Failed, Failure: &backend.Failure{End: backend.EndRefused, Reason: "pair_refused",
				Detail: fmt.Sprintf("the continuation's %s %q is not the %q its handle's subagent ran", part, partOf(t.Call.Pair, part), partOf(from, part))}}
		}
		prior = append(prior, from)
	}
	s := &step{b: b, t: t, rec: rec, attempt: attempt, reports: make(chan bus.Report, 1), prior: prior, ran: journal.Pair{Model: t.Thread.Model, Effort: t.Thread.Effort}, note: t.Note}
	s.register(bus.Marker(t.Call.ID, t.K, attempt))
	defer s.register("")
	return s.run(ctx)
}

func (b *Backend) setBound(marker, agent string) {
	b.mu.Lock()
	b.bound[marker] = agent
	b.mu.Unlock()
	if call, _, attempt, ok := bus.ParseMarker(marker); ok {
		_ = b.bus.MarkBound(call, attempt, agent)
	}
}

// register makes marker the one the step waits under ("": none); reports for the marker it
// had are told close from now on.
func (s *step) register(marker string) {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.marker != "" {
		delete(b.waiting, s.marker)
	}
	if marker != "" {
		b.waiting[marker] = s.reports
		s.marker = marker
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
	if th.Bind != nil && th.Bind.Attempt > 0 {
		attempt = th.Bind.Attempt
	}
	if err := b.closeStep(call.ID, attempt, th.ID); err != nil {
		b.cfg.Warn("step_unwritten", "the close step of "+call.ID+" could not be written")
	}
}

// step is one turn on its way: published, bound, harvested.
type step struct {
	b       *Backend
	t       backend.Turn
	rec     backend.Recorder
	marker  string
	attempt int
	// rerun: this step runs its turn again, the attempt before it lost.
	rerun   bool
	reports chan bus.Report

	file   bus.StepFile
	agent  string // the bound subagent
	turnID string

	failures     int // writes of the step that failed since it was last written
	firstFailure time.Time
	lastFailure  time.Time
	lastError    string // the last failure's error

	note         string         // what the packet says of earlier attempts
	prior        []journal.Pair // the pairs earlier attempts, or the handle's subagent, ran
	ran          journal.Pair   // the bound subagent's
	conversation string         // what a continuation's packet says of the conversation it goes on from

	recovered  bool // an earlier process published the step
	lookups    int  // the marker lookups of a recovered step so far
	hostWarned bool // its session_host_warning is written
}

func (s *step) run(ctx context.Context) backend.Outcome {
	b := s.b
	s.file = s.stepFile()
	s.recovered = s.t.Sent != nil
	if s.t.Conversation != nil && s.file.Action == bus.ActionSpawn {
		// A continuation runs on a new subagent, which cannot fork the handle's: its packet
		// carries the journal's record of the conversation instead.
		ex, err := s.t.Conversation()
		if err != nil {
			return backend.Outcome{Status: backend.Unavailable, Cause: err}
		}
		s.conversation = bus.ConversationSection(ex)
		if s.t.Sent == nil && s.t.Resumed {
			calls := make([]string, len(ex))
			for i, e := range ex {
				calls[i] = e.Call
			}
			s.rec.CheckpointStarted(backend.Checkpoint{Handle: s.t.Call.Resume, Calls: calls, Digest: digest(s.conversation)})
		}
		if n := len(ex); n > 0 {
			// The call it continues: its packet, and its answer in a file beside this call's
			// steps (the checkpoint's digest is of the conversation alone).
			from := ex[n-1]
			answerFile := ""
			if from.Answer != "" {
				answerFile, _ = b.bus.Attach(s.t.Call.ID, "continues-"+from.Call+"-answer.md", []byte(from.Answer))
			}
			s.conversation += bus.ContinuesSection(from.Call, from.Packet, answerFile)
		}
	}
	if sent := s.t.Sent; sent != nil && sent.Lost != "" {
		// The journal has the attempt lost already: on to the next one, without judging it again.
		s.agent = s.t.Thread.ID
		if out, ok := s.nextAttempt(backend.LostAttempt{Attempt: s.attempt, AgentID: s.agent, Reason: sent.Lost}, true); !ok {
			return out
		}
	} else if sent != nil && sent.TurnID != "" && s.t.Thread.ID != "" && s.t.K == 1 || sent != nil && sent.TurnID != "" && s.file.Action == bus.ActionSendInput {
		// An earlier process bound the step: the call goes on reading that turn.
		s.agent, s.turnID = s.t.Thread.ID, sent.TurnID
		b.setBound(s.marker, s.agent)
		_ = b.bus.Retract(s.t.Call.ID, s.t.K, s.attempt)
	} else if s.t.Sent == nil {
		if out, ok := s.dispatch(); !ok {
			return out
		}
	} else if !b.bus.Published(s.t.Call.ID, s.t.K, s.attempt) {
		// An earlier process published it; the step file is gone with a retraction or was never
		// written: it is published again (the same step, no new row) once the host shows nothing.
		if !s.lookup(ctx) {
			s.publish(s.packet())
		}
	}
	for {
		if s.agent == "" {
			if out, ok := s.awaitBind(ctx); !ok {
				return out
			}
		}
		out, lost := s.harvest(ctx)
		if lost == nil {
			return out
		}
		if out, ok := s.nextAttempt(*lost, false); !ok {
			return out
		}
	}
}

// dispatch journals the step (its row committed first) and publishes it.
func (s *step) dispatch() (backend.Outcome, bool) {
	packet := s.packet()
	st := backend.Step{Marker: s.marker, Op: s.file.Op, Attempt: s.attempt, Action: s.file.Action, Input: s.file.Message,
		Packet: s.file.Packet, PacketDigest: digest(packet), Role: s.t.Call.Role, AgentType: s.file.AgentType,
		Model: s.file.Model, Effort: s.file.ReasoningEffort, Workspace: s.file.Workspace, AgentID: s.file.AgentID,
		Note: s.note, ConversationTurn: s.t.K, PreviousAnswer: s.t.PreviousAnswer, CallTokens: s.t.Spent}
	if st.Action == bus.ActionSendInput {
		st.TokensSeen = s.t.Spent // the subagent's earlier turns: the call's (a lost attempt's turn counts nothing)
	}
	if s.rerun {
		// The next attempt of a lost turn: a turn run again, at the place of the one it
		// replaces. A later turn of the same attempt (its repair) replaces nothing.
		st.ReplacesTurn = s.t.K
	}
	s.rec.Dispatched(st)
	if err := s.rec.Commit(); err != nil {
		return backend.Outcome{Status: backend.Unavailable, Cause: err}, false
	}
	s.publish(packet)
	return backend.Outcome{}, true
}

// nextAttempt gives up on a lost attempt: its row (unless recorded already), a close step for
// its subagent, and the next attempt's step, a spawn in the same workspace whose packet says why.
func (s *step) nextAttempt(lost backend.LostAttempt, recorded bool) (backend.Outcome, bool) {
	if !recorded {
		s.rec.AttemptLost(lost)
		// Durable before the close step acts on the host: a process that can no longer write
		// the journal (its hold on the run lost) leaves the subagent to the next process.
		if err := s.rec.Commit(); err != nil {
			return backend.Outcome{Status: backend.Unavailable, Cause: err}, false
		}
	}
	if s.agent != "" {
		s.b.bus.Unbind(s.t.Call.ID, s.attempt)
		if err := s.b.closeStep(s.t.Call.ID, s.attempt, s.agent); err != nil {
			s.rec.Warn("step_unwritten", "the close step of "+s.agent+" could not be written")
		}
	}
	s.note = fmt.Sprintf("Attempt %d of this turn was cut off: its subagent stopped before it answered (%s). Do the task from the start.", s.attempt, lost.Reason)
	if s.t.Call.Role == "executor" || s.t.Call.Role == "executor-t1" {
		s.note += fmt.Sprintf(" The workspace may hold its changes: read git -C %s status and the diff first.", s.file.Workspace)
	}
	s.register(bus.Marker(s.t.Call.ID, s.t.K, s.attempt+1))
	s.attempt++
	s.rerun = true
	if s.agent != "" {
		s.prior = append(s.prior, s.ran)
	}
	s.agent, s.turnID = "", ""
	s.t.Thread = backend.Thread{} // the next attempt spawns a subagent of its own
	s.file = s.stepFile()
	return s.dispatch()
}

// stepFile is the step as the owner reads it.
func (s *step) stepFile() bus.StepFile {
	c := s.t.Call
	ws := c.Workspace
	if ws == "" {
		// A run without a repository: a call-private directory under the run's folder.
		ws = filepath.Join(s.b.cfg.Dir, "calls", c.ID)
	}
	f := bus.StepFile{Call: c.ID, K: s.t.K, Attempt: s.attempt, Op: bus.Op(c.ID, s.t.K), Marker: s.marker, Role: c.Role,
		AgentType: roles.AgentType(c.Role), Model: c.Pair.Model, ReasoningEffort: c.Pair.Effort, Workspace: ws,
		Packet: s.b.bus.PacketPath(c.ID, s.t.K, s.attempt)}
	if s.t.K > 1 && s.t.Thread.ID != "" {
		f.Action, f.AgentID = bus.ActionSendInput, s.t.Thread.ID
		f.Message = bus.SendInputMessage(s.marker, s.t.Prompt)
	} else {
		f.Action = bus.ActionSpawn
		f.Message = bus.SpawnMessage(s.marker, c.Role, ws, f.Packet)
	}
	return f
}

func (s *step) packet() string {
	task := s.t.Prompt
	if s.t.K > 1 && s.file.Action == bus.ActionSpawn && s.t.Task != "" {
		// A repair on a new subagent (its own was lost): the task once, the answer repaired and
		// the instruction, as the subagent has no conversation to repair in.
		task = s.t.RepairOnItsOwn()
	}
	return bus.Packet(bus.PacketInput{Marker: s.marker, Role: s.t.Call.Role, Workspace: s.file.Workspace, Env: s.b.cfg.Env,
		RunJSON: filepath.Join(s.b.cfg.Dir, "run.json"), Note: s.note, Conversation: s.conversation, Task: task, Schema: string(s.t.Call.Schema)})
}

// publish makes the step visible. A step that cannot be written (a full disk) was sent to
// nobody: it is written again at each poll and never ends the call. Its step_unwritten warning
// is written at the 1st, 10th, 100th, ... failure, and a closing one when it is written at last
// (or, from unwritten, when the turn ends), so a long outage costs a few rows, not one a poll.
func (s *step) publish(packet string) bool {
	err := mkdirWorkspace(s.file.Workspace)
	if err == nil {
		err = s.b.bus.Publish(s.file, packet)
	}
	now := time.Now().UTC()
	if err == nil {
		s.closeUnwritten(true)
		return true
	}
	s.failures++
	if s.failures == 1 {
		s.firstFailure = now
	}
	s.lastFailure, s.lastError = now, err.Error()
	if isPowerOf10(s.failures) {
		s.unwritten(nil)
	}
	return false
}

// closeUnwritten writes the closing step_unwritten row of a step that failed to be written:
// written once it is, not written when its turn ended first. Nothing when it never failed.
func (s *step) closeUnwritten(written bool) {
	if s.failures == 0 {
		return
	}
	s.unwritten(&written)
	s.failures = 0
}

// unwritten writes a step_unwritten flow row of the step.
func (s *step) unwritten(written *bool) {
	s.b.cfg.Flow(&journal.Row{Type: journal.TypeStepUnwritten, Call: s.t.Call.ID, Marker: s.marker, K: s.t.K, Attempt: s.attempt,
		Action: s.file.Action, Rare: &journal.Rare{Unwritten: &journal.Unwritten{InputState: "not_delivered", Error: s.lastError,
			Failures: s.failures, FirstAt: s.firstFailure, LastAt: s.lastFailure, Written: written}}})
}

func isPowerOf10(n int) bool {
	for n >= 10 && n%10 == 0 {
		n /= 10
	}
	return n == 1
}

// awaitBind waits for the subagent of the step: a report in the inbox, or the marker found on
// the host. ok is false when the turn ended before a bind (its outcome is returned).
func (s *step) awaitBind(ctx context.Context) (backend.Outcome, bool) {
	b := s.b
	tick := time.NewTicker(b.cfg.Poll)
	defer tick.Stop()
	written := b.bus.Published(s.t.Call.ID, s.t.K, s.attempt)
	for polls := 1; ; polls++ {
		select {
		case <-ctx.Done():
			// A pause, a cancel or a deadline. A subagent that took the step without a report
			// (the send_input's subagent, or a spawn found by its marker) has a turn running:
			// it is bound, then interrupted, rather than left at work (seed 003).
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.InterruptWait)
			found := written && s.lookup(lctx)
			cancel()
			if found {
				return s.interrupt(), false
			}
			_ = b.bus.Retract(s.t.Call.ID, s.t.K, s.attempt)
			s.closeUnwritten(false)
			return backend.Outcome{Status: backend.Interrupted}, false
		case <-b.closed.Done():
			s.closeUnwritten(false)
			return closedOutcome(), false
		case r := <-s.reports:
			reply := s.judge(ctx, r.Agent)
			_ = b.bus.Answer(r, reply)
			if reply.Reply == bus.ReplyBound {
				return backend.Outcome{}, true
			}
		case <-tick.C:
			if !written {
				written = s.publish(s.packet())
			}
			if polls%b.cfg.LookupEvery == 0 && s.lookup(ctx) {
				return backend.Outcome{}, true
			}
		}
	}
}

// lookup looks the step's marker up on the host: the subagent that carries it for a spawn,
// the marker turn on the subagent for a send_input; it binds what it finds.
func (s *step) lookup(ctx context.Context) bool {
	if s.file.Action == bus.ActionSendInput {
		return s.judge(ctx, s.file.AgentID).Reply == bus.ReplyBound
	}
	threads, err := s.b.cfg.Host.Subagents(ctx)
	if err != nil {
		return false
	}
	for _, th := range threads {
		if th.ParentThreadID == s.b.cfg.Owner && bus.MarkerOf(th.Preview) == s.marker {
			if s.judge(ctx, th.ID).Reply == bus.ReplyBound {
				return true
			}
		}
	}
	if !s.recovered {
		return false
	}
	// The owner's turns and the ledger are read whole: at the first lookup, then every
	// joinEvery lookups, not at each one while the step waits.
	s.lookups++
	return (s.lookups-1)%joinEvery == 0 && s.joinLedger(ctx)
}

// joinEvery is how many marker lookups of a recovered step go between two joins with the
// owner's spawn calls.
const joinEvery = 16

// joinLedger looks a step an earlier process published up by the owner's spawn calls: the
// call its ledger line names, else a spawn whose message carries the marker. What it cannot
// tie as it should is a session_host_warning row, once a step.
func (s *step) joinLedger(ctx context.Context) bool {
	spawner, ok := s.b.cfg.Host.(host.OwnerSpawner)
	if !ok || s.b.cfg.Ledger == nil {
		return false
	}
	spawns, err := spawner.OwnerSpawns(ctx, s.b.cfg.Owner)
	if err != nil {
		return false
	}
	lines, _ := s.b.cfg.Ledger(s.b.cfg.Owner)
	calls := map[string]bool{}
	for _, l := range lines {
		if l.Op == s.marker && l.ToolUseID != "" {
			calls[l.ToolUseID] = true
		}
	}
	var tied []host.Spawn
	var warnings []string
	for _, sp := range spawns {
		switch {
		case calls[sp.CallID] && bus.MarkerOf(sp.Prompt) != s.marker:
			warnings = append(warnings, "ledger_op_differs")
		case calls[sp.CallID]:
			tied = append(tied, sp)
		case bus.MarkerOf(sp.Prompt) == s.marker:
			tied = append(tied, sp)
			warnings = append(warnings, "no_ledger_line")
		}
	}
	if len(tied) > 1 {
		warnings = append(warnings, "several_spawns")
	}
	shown := map[string]bool{}
	for _, sp := range spawns {
		shown[sp.CallID] = true
	}
	for call := range calls {
		if !shown[call] {
			warnings = append(warnings, "window_ended") // the ledger names a call the owner's turns no longer show
		}
	}
	if len(warnings) > 0 && !s.hostWarned {
		s.hostWarned = true
		slices.Sort(warnings)
		s.b.cfg.Flow(&journal.Row{Type: journal.TypeSessionHostWarning, Op: s.file.Op, Marker: s.marker, Warnings: slices.Compact(warnings),
			Detail: fmt.Sprintf("the owner's spawns tied to %s: %d", s.marker, len(tied))})
	}
	for _, sp := range tied {
		if s.judge(ctx, sp.Agent).Reply == bus.ReplyBound {
			return true
		}
	}
	return false
}

// judge decides a subagent reported for the step, and binds it when it is the step's.
func (s *step) judge(ctx context.Context, agent string) bus.Reply {
	reply := bus.Reply{Marker: s.marker, Agent: agent}
	th, err := s.b.cfg.Host.ReadThread(ctx, agent)
	switch {
	case errors.Is(err, host.ErrUnknownThread) && s.b.cfg.PrivateHost:
		// Codex writes a subagent's rollout lazily: a private host may not see it yet.
		reply.Reply, reply.Detail = bus.ReplyRetry, "the run's private app server does not see the subagent on disk yet"
		return reply
	case errors.Is(err, host.ErrUnknownThread):
		reply.Reply, reply.Detail = bus.ReplyRefused, "the host does not know the subagent"
		return reply
	case err != nil:
		reply.Reply, reply.Detail = bus.ReplyRetry, "the host cannot be read yet"
		return reply
	case th.ParentThreadID != s.b.cfg.Owner:
		reply.Reply, reply.Detail = bus.ReplyRefused, "the subagent is not a subagent of the run's owner thread"
		return reply
	}
	turn := markerTurn(th, s.marker)
	if turn == nil {
		reply.Reply, reply.Detail = bus.ReplyRetry, "the subagent has no turn that carries the marker yet"
		return reply
	}
	if s.file.Action == bus.ActionSpawn && s.t.Thread.ID != "" && th.ID != s.t.Thread.ID {
		// An earlier process bound another subagent to this attempt.
		reply.Reply, reply.Detail = bus.ReplyClose, secondSubagent
		return reply
	}
	if s.file.Action == bus.ActionSpawn && s.t.Thread.ID == "" {
		if want := s.t.Call.Pair; (want.Model != "" && want.Model != th.Model) || (want.Effort != "" && want.Effort != th.Effort) {
			reply.Reply, reply.Model, reply.Effort = bus.ReplyPairMismatch, want.Model, want.Effort
			reply.Detail = fmt.Sprintf("the subagent runs %s/%s, the role's pair is %s/%s: close it and spawn again with the role's pair",
				th.Model, th.Effort, orAny(want.Model), orAny(want.Effort))
			return reply
		}
		if th.AgentRole != "" && th.AgentRole != s.file.AgentType {
			s.rec.Warn("session_agent_role_mismatch", fmt.Sprintf("the subagent was spawned as %q, the step's agent type is %q", th.AgentRole, s.file.AgentType))
		}
		ran := journal.Pair{Model: th.Model, Effort: th.Effort}
		s.ran = ran
		var prior []journal.Pair
		for _, p := range s.prior {
			if p != ran && !slices.Contains(prior, p) {
				prior = append(prior, p)
			}
		}
		s.rec.Thread(backend.Thread{ID: th.ID, Model: th.Model, Effort: th.Effort, Cwd: s.file.Workspace, RolloutPath: th.RolloutPath,
			Bind: &backend.Bind{Via: Name, HostCwd: th.Cwd, ParentThreadID: th.ParentThreadID, AgentRole: th.AgentRole, Marker: s.marker, Attempt: s.attempt,
				PairCheck: pairCheck(s.t.Call.Pair), PriorPairs: prior}})
	}
	s.rec.Started(turn.ID)
	if err := s.rec.Commit(); err != nil {
		reply.Reply, reply.Detail = bus.ReplyRetry, "the run cannot record the bind"
		return reply
	}
	s.agent, s.turnID = th.ID, turn.ID
	s.b.setBound(s.marker, th.ID)
	_ = s.b.bus.Retract(s.t.Call.ID, s.t.K, s.attempt)
	reply.Reply = bus.ReplyBound
	return reply
}

// decidedPartDiffers tells which decided part of the call's pair (model, else effort) differs
// from what a subagent ran; a part either leaves open is not compared.
func decidedPartDiffers(want, ran journal.Pair) (string, bool) {
	switch {
	case want.Model != "" && ran.Model != "" && want.Model != ran.Model:
		return "model", true
	case want.Effort != "" && ran.Effort != "" && want.Effort != ran.Effort:
		return "effort", true
	}
	return "", false
}

func partOf(p journal.Pair, part string) string {
	if part == "model" {
		return p.Model
	}
	return p.Effort
}

// pairCheck names what a bind could not check of the role's pair: the parts the role table
// leaves to the host.
func pairCheck(want journal.Pair) string {
	switch {
	case want.Model == "" && want.Effort == "":
		return "pair_unchecked"
	case want.Effort == "":
		return "effort_unchecked"
	case want.Model == "":
		return "model_unchecked"
	}
	return ""
}

func orAny(s string) string {
	if s == "" {
		return "(the host's)"
	}
	return s
}

// markerTurn is the subagent's turn whose first user message carries the marker.
func markerTurn(th host.Thread, marker string) *host.Turn {
	for i := range th.Turns {
		if bus.MarkerOf(th.Turns[i].FirstUserMessage) == marker {
			return &th.Turns[i]
		}
	}
	return nil
}

// harvest reads the bound subagent until its marker turn ends, or until the attempt is lost:
// its marker turn did not complete, its thread is notLoaded, systemError or unknown to the host,
// and the turn ended interrupted or failed without an error, or has not changed for LostAfter.
// The thread is read once more before an attempt is judged lost, and a poll later before an
// interrupted turn is taken as the host's interrupt. A read the host cannot answer
// judges nothing and leaves the time of the last change as it is. On a private host, where a
// running subagent reads notLoaded with its turn interrupted, neither is evidence: an attempt
// is lost only when its turn, its thread and its rollout have not changed for LostAfter.
// interruptSettle is how long a marker turn the host shows interrupted, its thread still
// loaded, is read again before it is taken as the host's interrupt rather than a subagent the
// owner closed.
const interruptSettle = 10 * time.Second

func (s *step) harvest(ctx context.Context) (backend.Outcome, *backend.LostAttempt) {
	tick := time.NewTicker(s.b.cfg.Poll)
	defer tick.Stop()
	private := s.b.cfg.PrivateHost
	lastKey, lastChange, suspect := "", time.Now(), false
	var interruptedAt time.Time // when the marker turn was first seen interrupted, its thread loaded
	for {
		th, err := s.b.cfg.Host.ReadThread(ctx, s.agent)
		unknown := errors.Is(err, host.ErrUnknownThread)
		if err == nil || unknown {
			hostStatus := th.Status
			if unknown {
				hostStatus = "unknown"
			}
			turn := markerTurn(th, s.marker)
			turnStatus := ""
			if turn != nil {
				turnStatus = turn.Status
			}
			key := hostStatus + "/" + turnStatus + "/" + fmt.Sprint(len(th.Turns))
			if private {
				key += "/" + fmt.Sprint(rolloutSize(th.RolloutPath)) // the subagent at work writes its rollout
			}
			if key != lastKey {
				lastKey, lastChange = key, time.Now()
			}
			gone := hostStatus == "unknown" || hostStatus == "notLoaded" || hostStatus == "systemError"
			stopped := !private && turn != nil && (turn.Status == "interrupted" || turn.Status == "failed" && turn.Error == nil)
			stale := time.Since(lastChange) >= s.b.cfg.LostAfter
			if private && turn != nil && (turn.Status == "interrupted" || turn.Status == "failed") && turn.Error == nil {
				turn = nil // it may run on in the owner's process: only LostAfter judges it
			}
			switch {
			case gone && turnStatus != "completed" && (stopped || stale):
				if suspect {
					reason := "turn_stopped"
					if !stopped {
						reason = "no_progress"
					}
					return backend.Outcome{}, &backend.LostAttempt{Attempt: s.attempt, AgentID: s.agent, TurnID: s.turnID,
						Reason: reason, HostStatus: hostStatus, TurnStatus: turnStatus}
				}
				suspect = true // read once more before judging
				continue
			case turn != nil && turn.Status == "interrupted" && (interruptedAt.IsZero() || time.Since(interruptedAt) < interruptSettle):
				// A subagent the owner closes mid-turn shows its turn interrupted a moment
				// before its thread is gone (longer on a loaded host): the turn is read again
				// until its thread goes or interruptSettle has passed, then it is the host's.
				if interruptedAt.IsZero() {
					interruptedAt = time.Now()
				}
			case turn != nil && turn.Status != "inProgress":
				return s.outcome(th, turn), nil
			}
			suspect = false
		}
		select {
		case <-ctx.Done():
			return s.interrupt(), nil
		case <-s.b.closed.Done():
			return closedOutcome(), nil
		case <-tick.C:
		}
	}
}

// rolloutSize is the size of a subagent's rollout file (-1 when it cannot be read).
func rolloutSize(path string) int64 {
	if path == "" {
		return -1
	}
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// closedOutcome is a step's end when its backend closed under it (its process is going away):
// the step stays as the bus and the host have it, for a later process to go on with.
func closedOutcome() backend.Outcome {
	return backend.Outcome{Status: backend.Lost, Open: true, Cause: errors.New("the session backend closed")}
}

// outcome is how an ended turn ends the step, with the turn's tokens from the subagent's
// rollout (a tokens_unmeasured warning when it has none: the run's figure then leaves it out).
func (s *step) outcome(th host.Thread, turn *host.Turn) backend.Outcome {
	out := backend.Outcome{TurnID: turn.ID}
	switch {
	case turn.Status == "completed" && turn.HasAnswer:
		out.Status, out.Text = backend.Answered, turn.Answer
	case turn.Status == "completed":
		out.Status, out.Text = backend.Answered, ""
	case turn.Error != nil:
		out.Status, out.Failure = backend.Failed, codex.Classify(turn.Error.Kind())
	default:
		out.Status = backend.Interrupted
	}
	if s.t.Counted != nil && s.t.Sent != nil && turn.ID == s.t.Sent.TurnID {
		// An earlier process measured this turn and recorded it in the next turn's step.
		out.Tokens = *s.t.Counted
	} else if tokens, ok := codex.RolloutTokens(th.RolloutPath, turn.ID); ok {
		out.Tokens = tokens
	} else {
		s.rec.Warn("tokens_unmeasured", "the turn "+turn.ID+" of "+s.marker+" has no usage in the subagent's rollout; pauses: false")
	}
	return out
}

// StopTurns implements backend.Stopper: an earlier process's turns of the call, interrupted on
// the host and read until none runs, before the call ends without them (seed 003).
func (b *Backend) StopTurns(ctx context.Context, call backend.Call, th backend.Thread, turnIDs []string) {
	if th.ID == "" || len(turnIDs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.InterruptWait)
	defer cancel()
	for _, turn := range turnIDs {
		_ = b.cfg.Host.InterruptTurn(ctx, th.ID, turn)
	}
	for {
		t, err := b.cfg.Host.ReadThread(ctx, th.ID)
		if errors.Is(err, host.ErrUnknownThread) {
			return
		}
		if err == nil && !runsAny(t, turnIDs) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(b.cfg.Poll):
		}
	}
}

// runsAny tells whether one of the turns is still in progress on the thread.
func runsAny(th host.Thread, turnIDs []string) bool {
	for _, t := range th.Turns {
		if t.Status == "inProgress" && slices.Contains(turnIDs, t.ID) {
			return true
		}
	}
	return false
}

var _ backend.Stopper = (*Backend)(nil)

// interrupt stops the bound turn on the host and reads it until it ends.
func (s *step) interrupt() backend.Outcome {
	ctx, cancel := context.WithTimeout(context.Background(), s.b.cfg.InterruptWait)
	defer cancel()
	_ = s.b.cfg.Host.InterruptTurn(ctx, s.agent, s.turnID)
	for {
		th, err := s.b.cfg.Host.ReadThread(ctx, s.agent)
		if err == nil {
			if turn := markerTurn(th, s.marker); turn == nil || turn.Status != "inProgress" {
				return backend.Outcome{Status: backend.Interrupted, TurnID: s.turnID}
			}
		}
		select {
		case <-ctx.Done():
			return backend.Outcome{Status: backend.Interrupted, TurnID: s.turnID}
		case <-time.After(s.b.cfg.Poll):
		}
	}
}

// digest is the sha256 of a text, as rows record digests.
func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

// mkdirWorkspace makes sure a call's directory P is there: the placer made it when the run
// has a repository, else it is a call-private directory under the run's folder.
func mkdirWorkspace(dir string) error { return os.MkdirAll(dir, 0o700) }
