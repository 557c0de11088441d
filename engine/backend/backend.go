// Package backend is the contract between the engine and the hosts that run turns: the fake,
// the Codex App Server and the session owner. The engine owns the call state machine (gate,
// validation, the one repair, terminal rows); a backend only opens threads and runs turns.
package backend

import (
	"context"
	"encoding/json"
	"time"

	"github.com/crw-dev/crw/journal"
)

// Call is what a backend knows of the call a thread or turn belongs to.
type Call struct {
	ID     string // the journal's call id
	Index  int    // 1-based order in which the script issued the call
	Role   string
	Node   string
	Pair   journal.Pair    // the configured pair; an empty part is left to the host
	Schema json.RawMessage // nil: a text answer
}

// ThreadRequest asks for the thread a call's turns run on.
type ThreadRequest struct {
	Call Call
	// From is the thread of the call a continuation resumes ("" for a fresh thread).
	From Thread
}

// Thread is a thread as the host reports it.
type Thread struct {
	ID          string
	Model       string
	Effort      string
	Cwd         string
	RolloutPath string
}

// TurnRequest is one turn: the task (K 1) or its repair (K 2).
type TurnRequest struct {
	Call   Call
	K      int
	Prompt string
}

// Outcome is how a turn ended.
type Outcome struct {
	TurnID string
	Text   string // the answer: the turn's last final message
	Tokens journal.Tokens

	// Failed turns carry the host's codexErrorInfo ("" when it gave none).
	Failed    bool
	ErrorInfo string
	// Lost: the request was sent and no answer will ever come (a lost connection, a timeout).
	Lost bool
	// Interrupted: the turn was interrupted (by the engine's context, or by someone else).
	Interrupted bool
}

// Backend runs threads and turns for the engine. Every method may be called from many
// goroutines at once.
type Backend interface {
	// Name is recorded in the run's started row: fake, app-server or session.
	Name() string
	// OpenThread makes a call's thread. commit makes the journal's intent rows durable; a
	// backend whose thread is an effect outside this process calls it before that effect.
	OpenThread(ctx context.Context, req ThreadRequest, commit func() error) (Thread, error)
	// Send starts a turn on the thread and returns its id without waiting for its answer. It
	// calls commit before the turn leaves the process.
	Send(ctx context.Context, th Thread, req TurnRequest, commit func() error) (turnID string, err error)
	// Wait waits for the turn's outcome. When ctx ends first the backend interrupts the turn
	// and reports it Interrupted (or however the host says it ended).
	Wait(ctx context.Context, th Thread, req TurnRequest, turnID string) Outcome
	// Reconcile finds a turn that an earlier process sent at sentAt and waits for its outcome;
	// a turn the host does not know is Lost.
	Reconcile(ctx context.Context, th Thread, req TurnRequest, turnID string, sentAt time.Time) Outcome
	// Close releases the backend's resources.
	Close() error
}

// LostLeavesIntent is a backend whose lost requests are decided by the reconcile pass of a
// later resume rather than by a terminal row: the host may still run the turn it never
// answered for. The script gets unknown / dispatch_unknown at once all the same.
type LostLeavesIntent interface {
	LostLeavesIntent() bool
}
