// Package pull is the contract of a pull backend beyond the one every backend speaks
// (engine/backend): a backend that hands each turn to an outside party as a step and waits
// (the session backend, whose owner runs each call on a role subagent). It reports the step it
// publishes (Recorder.Dispatched), commits, makes the step visible, and when the party reports
// the thread and turn it started for it (a bind), reports those, the thread with its Bind; it
// harvests the answer, gives up on an attempt whose subagent will not finish (AttemptLost) and
// goes on with the next, retracts a step nobody took when ctx ends, and lets the thread go in
// Done. A continuation that cannot fork its handle's thread starts from the journal's record of
// its conversation (CheckpointStarted).
//
// The engine's recorder of every turn is a Recorder: a pull backend takes it by a type
// assertion, and reads from it what the journal holds of the turn that only a pull backend
// needs (Turn: the step an earlier process published for it, its attempts, its note). Only pull
// backends and the runner that serves them import this package: a push backend (the fake, the
// App Server) never does (TestPushBackendsDoNotImportPull).
package pull

import (
	"encoding/json"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/journal"
)

// Recorder is the engine's side of a pull backend's turn: backend.Recorder, the rows only a
// pull backend reports, and what the journal holds of the turn for it. Its methods are safe for
// concurrent use.
type Recorder interface {
	backend.Recorder
	// Turn is what the journal holds of the turn that a pull backend needs beyond
	// backend.Turn.
	Turn() Turn
	// Dispatched reports the step the turn is handed over as (a step_published row); commit
	// before the step becomes visible.
	Dispatched(step Step)
	// AttemptLost reports that an attempt will not finish (a session_attempt_lost row): its
	// subagent stopped before it answered. The backend goes on with the next attempt.
	AttemptLost(LostAttempt)
	// CheckpointStarted reports a continuation that starts from the journal's record of its
	// conversation (a checkpoint_started row), before its first step or thread.
	CheckpointStarted(Checkpoint)
}

// Turn is what a pull backend is told of a turn beyond backend.Turn.
type Turn struct {
	// StepAttempts is the highest attempt of a step an earlier generation of the call
	// published (0: none): the generation's first step is numbered above it.
	StepAttempts int
	// Sent is backend.Turn.Sent with what the journal recorded of the step an earlier process
	// published for the turn; nil when backend.Turn.Sent is.
	Sent *Sent
	// Spent is what the call's turns so far counted, which the step carries.
	Spent journal.Tokens
	// Note says why an earlier generation of the call stopped (a held call going on): the
	// packet gives it with the earlier attempts. "" for none.
	Note string
	// Counted, when not nil, is what an earlier process counted for this turn (the call_tokens
	// of the step it published for the turn after it): the backend reports it as the turn's
	// tokens instead of measuring the turn again, which a rollout gone since could not do.
	Counted *journal.Tokens
	// Resumed tells the turn runs in a resume's suffix: this process replayed the journal.
	Resumed bool
}

// Sent is what the journal recorded of a turn an earlier process dispatched, with the step it
// published for it.
type Sent struct {
	backend.Sent
	Marker string // the step published for it ("" for none)
	// Attempt is the step's attempt, as its step_published row recorded it (0 without a step).
	Attempt int
	// Lost is the reason the journal recorded the step's attempt lost with ("": it did not):
	// the backend goes on to the next attempt without judging it again.
	Lost string
}

// Step is a turn a pull backend hands over: the members of its step_published row.
type Step struct {
	Marker           string // <call>/t<k>-a<attempt>
	Op               string // <call>/t<k>
	Attempt          int
	Action           string // spawn or send_input
	Input            string // the message the subagent is sent
	Packet           string // the packet file, relative to the run's folder
	PacketDigest     string
	Role, AgentType  string
	Model, Effort    string
	Workspace        string
	AgentID          string // a send_input's subagent
	Note             string
	PreviousAnswer   string
	TokensSeen       journal.Tokens
	CallTokens       journal.Tokens
	ConversationTurn int
	ReplacesTurn     int
}

// Row is the step_published row of the step, of turn k of call.
func (st Step) Row(call string, k int) *journal.Row {
	row := &journal.Row{Type: journal.TypeStepPublished, Call: call, K: k, Marker: st.Marker, Op: st.Op, Attempt: st.Attempt,
		Action: st.Action, Packet: st.Packet, PacketDigest: st.PacketDigest, Role: st.Role, AgentType: st.AgentType,
		Model: st.Model, Effort: st.Effort, Workspace: st.Workspace, AgentID: st.AgentID, Note: st.Note,
		PreviousAnswer: st.PreviousAnswer, ConversationTurn: st.ConversationTurn, ReplacesTurn: st.ReplacesTurn}
	if st.Input != "" {
		row.Input, _ = json.Marshal(st.Input)
		row.InputDigest = journal.Digest(st.Input)
	}
	if !st.TokensSeen.IsZero() {
		t := st.TokensSeen
		row.TokensSeen = &t
	}
	if !st.CallTokens.IsZero() {
		t := st.CallTokens
		row.CallTokens = &t
	}
	return row
}

// Bind is what a pull backend read of a subagent it bound to a step: a thread's
// backend.Binding, which the thread's row keeps.
type Bind struct {
	Via            string // "session"
	HostCwd        string // the cwd the host reports (a subagent's is its parent's)
	ParentThreadID string
	AgentRole      string
	Marker         string
	Attempt        int
	PairCheck      string         // pair_unchecked, effort_unchecked, model_unchecked, or "" (checked)
	PriorPairs     []journal.Pair // the pairs earlier attempts (or the handle's subagent) ran, when they differ
}

var _ backend.Binding = (*Bind)(nil)

// Row implements backend.Binding: the bind's members of the thread_started row (none for a nil
// Bind).
func (b *Bind) Row(row *journal.Row) {
	if b == nil {
		return
	}
	row.Via, row.HostCwd, row.ParentThreadID, row.AgentRole = b.Via, b.HostCwd, b.ParentThreadID, b.AgentRole
	row.Marker, row.Attempt, row.PairCheck, row.PriorPairs = b.Marker, b.Attempt, b.PairCheck, b.PriorPairs
}

// ReadBind is the bind a thread_started row keeps (Row), nil for a thread no pull backend
// bound.
func ReadBind(row *journal.Row) *Bind {
	if row.Via == "" {
		return nil
	}
	return &Bind{Via: row.Via, HostCwd: row.HostCwd, ParentThreadID: row.ParentThreadID, AgentRole: row.AgentRole,
		Marker: row.Marker, Attempt: row.Attempt, PairCheck: row.PairCheck, PriorPairs: row.PriorPairs}
}

// BindOf is a thread's bind, nil for a thread no pull backend bound.
func BindOf(th backend.Thread) *Bind {
	b, _ := th.Bind.(*Bind)
	return b
}

// LostAttempt is an attempt a pull backend gave up on.
type LostAttempt struct {
	Attempt    int
	AgentID    string
	TurnID     string
	Reason     string // thread_gone, turn_stopped, no_progress
	HostStatus string // the thread's status on the host ("unknown" when the host does not know it)
	TurnStatus string
}

// Checkpoint is a continuation that starts from the journal's record of its conversation
// instead of forking its handle's thread.
type Checkpoint struct {
	Handle string   // the resume handle
	Calls  []string // the calls of the conversation, oldest first
	Digest string   // of the conversation the new thread is given
}
