// Package backend is the contract every backend speaks with the engine, and the registry: the
// fake, the Codex App Server, the session owner. The engine owns the call's state machine (the
// gate, validation, the one repair, terminal rows); a backend runs one turn at a time and says
// how it ended, in the typed Outcome below, and reports what happens on the way through a
// Recorder, which the engine journals.
//
// Two kinds of backend fit it. A push backend acts itself: it opens a thread, commits, sends
// the turn, reports the turn's id, and waits for the answer (the fake, the App Server). A pull
// backend hands the turn to an outside party and waits, and speaks engine/backend/pull besides
// (the steps it publishes, its binds, its lost attempts), which only it and the runner import.
// Both are told, for a turn an earlier process may have dispatched, what the journal recorded
// of it (Turn.Sent): a backend finds such a turn on its host and never dispatches it again.
package backend

import (
	"context"
	"encoding/json"
	"time"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Call is what a backend knows of the call a turn belongs to.
type Call struct {
	ID      string // the journal's call id
	Index   int    // 1-based order in which the script issued the call
	Attempt int    // 1 for the call's first prepared row, 2 when a resume ran it again, ...
	Role    string
	Node    string
	Pair    journal.Pair    // the configured pair; an empty part is left to the host
	Schema  json.RawMessage // nil: a text answer
	Resume  string          // the handle a continuation resumes; "" for any other call
	// NodeCall and RoleCall are its 1-based order among the calls of its node, and of its
	// role, that the script issued: counted as Index is, so a resume, which replays the
	// journal's calls, gives a call the same ones.
	NodeCall, RoleCall int
	// Workspace is the call's directory P, which the placer made (docs/workspaces.md): the
	// thread's cwd, the subagent's workspace, where the fake writes its files. "" when the
	// run has no repository and the call writes nothing: the run's cwd.
	Workspace string
}

// Thread is a call's thread (its conversation on the host) as the host reports it.
type Thread struct {
	ID          string
	Model       string
	Effort      string
	Cwd         string
	RolloutPath string
	// Bind is how a pull backend bound the thread to its step (engine/backend/pull.Bind); nil
	// for a thread the backend opened itself. The engine keeps it with the thread without
	// reading it: journaled in the thread's row (Binding.Row), and read back from that row with
	// the thread.
	Bind Binding
}

// Binding is how a backend came by a thread it did not open (a pull backend's bind,
// engine/backend/pull.Bind): it writes what the journal keeps of it into the thread's row.
type Binding interface {
	Row(row *journal.Row)
}

// Turn is one turn the engine asks for: the call's task (K 1) or its repair (K 2).
type Turn struct {
	Call   Call
	K      int
	Prompt string
	// Task is the call's own prompt (a repair turn's Prompt is the repair instruction), and
	// PreviousAnswer the answer a repair turn repairs (RepairOnItsOwn).
	Task           string
	PreviousAnswer string
	// Thread is the call's thread when it has one: the task turn's, for the repair, or one an
	// earlier process of the run opened. Empty, the backend opens one and reports it.
	Thread Thread
	// From is the thread of the call a continuation resumes (resume: handle), when the
	// backend opens the call's thread.
	From Thread
	// Conversation, for a continuation, reads the journal's record of the conversation it
	// goes on from: the calls of its handle chain, oldest first. A backend that cannot fork
	// the handle's thread gives it to the new one. nil for any other call.
	Conversation func() ([]Exchange, error)
	// Sent is not nil when an earlier process of the run may have dispatched this very turn:
	// its intent is durable, whether it reached the host is unknown. The backend finds it on
	// its host and takes its outcome, and reports Lost when the host does not know it.
	Sent *Sent
	// OpensWithRepair: the call's generation starts with this repair (its held generation was
	// in it), so the thread it runs on never had the task: the turn's text is RepairOnItsOwn.
	OpensWithRepair bool
}

// RepairOnItsOwn is a repair turn's text for a thread that never had the task (a new subagent,
// or a held call's generation that goes on with its repair): the task once, the answer
// repaired and the instruction.
func (t Turn) RepairOnItsOwn() string {
	return t.Task + "\n\n### The answer to repair\n\n" + t.PreviousAnswer + "\n\n### What to do\n\n" + t.Prompt
}

// Exchange is one call of a continuation's conversation as the journal records it: its task
// and how it ended (the answer as the model gave it, for a completed call), turn by turn.
type Exchange struct {
	Call   string
	Prompt string
	Status string // completed, null_model, held, refused, unknown or superseded
	Answer string
	// Turns are the call's conversation turns, each once (a turn run again in place of the
	// one it replaces): the task (K 1) and its repair (K 2), each with the answer it got ("" for
	// none). Packet is the packet file of the call's last step (a pull backend's), "" for none.
	Turns  []ExchangeTurn
	Packet string
}

// ExchangeTurn is one conversation turn of a call: what it was asked and what it answered.
type ExchangeTurn struct {
	K      int
	Prompt string
	Answer string
}

// Sent is what the journal recorded of a turn an earlier process dispatched (a pull backend is
// told the step it published for it besides: engine/backend/pull.Sent).
type Sent struct {
	TurnID string    // "" when the process died before it recorded one
	At     time.Time // when its intent was recorded
}

// Recorder is how a backend reports what happens while it runs a turn; the engine journals
// each report as a row of the call. Its methods are safe for concurrent use.
type Recorder interface {
	// Commit makes every row reported so far durable. A backend calls it before an effect
	// leaves the process: a thread or turn started on a host, a step published.
	Commit() error
	// Thread reports the call's thread (a thread_started row, with its Bind).
	Thread(Thread)
	// Started reports the turn's id on the host (a turn_started row).
	Started(turnID string)
	// Warn records something of the host's that the run should keep (a warning row of the
	// call): a request it declined, a step it could not write.
	Warn(reason, detail string)
}

// Status is how a turn ended.
type Status uint8

const (
	// Answered: the turn completed; Text is its answer.
	Answered Status = iota + 1
	// Failed: the host reported a failure; Failure says how it ends the call.
	Failed
	// Interrupted: the turn stopped with no error, because ctx ended or someone else
	// interrupted it.
	Interrupted
	// Lost: the turn was dispatched and no answer will come; whether it ran is unknown.
	Lost
	// Unavailable: the host could not be reached; nothing was dispatched.
	Unavailable
)

var statusNames = [...]string{Answered: "answered", Failed: "failed", Interrupted: "interrupted", Lost: "lost", Unavailable: "unavailable"}

func (s Status) String() string {
	if int(s) < len(statusNames) && statusNames[s] != "" {
		return statusNames[s]
	}
	return "unknown"
}

// Outcome is how a turn ended.
type Outcome struct {
	Status Status
	TurnID string
	Text   string // Answered: the turn's answer, its last final message
	Tokens journal.Tokens
	// Failure says how a Failed turn ends its call; the backend's host vocabulary decided it.
	Failure *Failure
	// Open, for a Lost turn: the host may still run it, so the engine leaves the turn's intent
	// as the call's last row for the reconcile pass of a later resume instead of writing a
	// terminal row. The script is told unknown all the same.
	Open bool
	// Cause is what went wrong, for tests. It may hold the host's own words (an RPC error's
	// message), so it reaches no row, no error, no diagnostic and no line of crw.log: Failure
	// and Status say what a user needs.
	Cause error
}

// End is a terminal row type a failure can end a call with.
type End string

const (
	EndHeld      End = End(journal.TypeHeld)
	EndRefused   End = End(journal.TypeRefused)
	EndNullModel End = End(journal.TypeNullModel)
)

// Failure is a host failure as its host's vocabulary classifies it: the call's terminal row
// and reason, and whether it pauses the run. The engine applies it without knowing the host.
type Failure struct {
	End    End
	Reason string // host_infra_<kind>, host_config_<kind>, budget_exhausted, ...
	Pause  bool   // a usage or rate limit: the run stops admitting calls
	// Detail names the host's own word for the failure, for the terminal row.
	Detail string
}

// Backend runs turns for the engine. Every method may be called from many goroutines at once.
type Backend interface {
	// Name is recorded in the run's started row.
	Name() string
	// Run runs one turn to its outcome, reporting on the way through rec. When ctx ends first
	// the backend stops the turn (interrupts it on the host, or retracts a step nobody took)
	// and reports how it ended: Interrupted, or whatever the host says.
	Run(ctx context.Context, t Turn, rec Recorder) Outcome
	// Done tells the backend the call has its terminal row: it may let go of the thread.
	Done(call Call, th Thread)
	// Close releases the backend's resources.
	Close() error
}

// Isolated is a backend whose calls' write isolation is judged against more than the run's
// repository (docs/workspaces.md, trace isolation): the checkout outside a call's directory
// that its host works from, and state of the backend's own that runs share.
type Isolated interface {
	// OutsideCheckout is the checkout whose changes while a call in p ran count as written
	// outside it ("": the run's repository checkout).
	OutsideCheckout(ctx context.Context, p string) string
	// SharedDigest is a digest of the backend's state that other runs share.
	SharedDigest() string
}

// Stopper is a backend whose host outlives a process (a session owner's subagents): a call an
// earlier process interrupted, or that a resume supersedes, may still have a turn running there.
type Stopper interface {
	// StopTurns interrupts the turns of a call that still run on its thread and reads the
	// thread until none does (bounded by the backend's own wait). It writes no row.
	StopTurns(ctx context.Context, call Call, th Thread, turnIDs []string)
}

// Lifecycle is a backend that does something of its own when a process of the run starts and
// ends it (the session backend binds its owner thread to the run, and lets it go once the run
// has ended). The engine asks for it by a type assertion and calls its hooks from the process
// that executes the run, one process's hooks one after the other:
//
//   - OnStart once the process's started row is durable, before the script runs: not for a
//     process that stops before (a workflow that does not load, a journal that cannot be
//     written).
//   - OnEnd once for every process that executed the run on the backend, OnStart or not, after
//     the runner is done and before Close: with the run's end as the process published it (its
//     State says ended, paused or waiting for a decision), or nil when the process stopped
//     without ending the run (a workflow that did not load, a divergence, a lost lease, a
//     signal). Its ctx is not cut short by the caller's stop.
//
// A hook's error is a warning of this process (not of the run: nothing journals it), and the
// run goes on as if the hook had done nothing.
type Lifecycle interface {
	OnStart(ctx context.Context, s RunStarted) error
	OnEnd(ctx context.Context, end *store.Status) error
}

// RunStarted is what OnStart is told of the process that started the run.
type RunStarted struct {
	Run string
	// Process is the process's place among the run's processes: 1 for the first, n for the one
	// that wrote the run's n-th started row.
	Process int
}
