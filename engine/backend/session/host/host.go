// Package host is what the session backend reads of the owner's Codex, and the interfaces of
// what a host can do beyond reading: show the owner's spawns (OwnerSpawner), read a thread's
// working directory (CwdReader), wake the owner (Waker). codexhost implements it on the Codex
// App Server; sessiontest plays it for tests.
package host

import (
	"context"
	"errors"

	"github.com/crw-dev/crw/engine/backend/codex"
)

// Host is what the session backend reads of the owner's Codex: the subagents the owner
// spawned, their turns and answers. crw never starts a thread or a turn on it; it only reads,
// and interrupts a turn it must stop (a pause, a cancel, a deadline).
type Host interface {
	// ReadThread reads a thread with its turns (thread/read, includeTurns). A thread the host
	// does not know is ErrUnknownThread.
	ReadThread(ctx context.Context, id string) (Thread, error)
	// Subagents lists the subagent threads the host knows, without their turns (thread/list
	// by the subagent source kind): where a published step's marker is looked up when its
	// spawn was never reported.
	Subagents(ctx context.Context) ([]Thread, error)
	// InterruptTurn asks the host to interrupt a running turn (turn/interrupt).
	InterruptTurn(ctx context.Context, threadID, turnID string) error
	// Close lets the host go (a connection, or a private app server).
	Close() error
}

// OwnerSpawner is a host that shows the owner's spawns: the spawn_agent calls of its turns
// (collabAgentToolCall items), where a published step's subagent is found after a restart by the
// call the spawn hook's ledger names.
type OwnerSpawner interface {
	OwnerSpawns(ctx context.Context, owner string) ([]Spawn, error)
}

// Spawn is one spawn_agent call of the owner that started a subagent.
type Spawn struct {
	CallID string // the tool call's id: the ledger's tool_use_id
	Agent  string // the subagent it started
	Prompt string // the message it was spawned with
}

// CwdReader is a host that reads a thread's working directory without its turns.
type CwdReader interface {
	ThreadCwd(ctx context.Context, thread string) (string, error)
}

// Waker is a host that can wake the owner thread: the owner's own app server. A private app
// server is none: a turn it started on the owner's thread would run outside the owner's process.
type Waker interface {
	// OwnerStatus is a thread's status (idle, active, notLoaded, systemError), read without
	// its turns.
	OwnerStatus(ctx context.Context, thread string) (string, error)
	// Wake starts a turn with text on the thread, resumed first when it is not loaded, and
	// returns the turn's id.
	Wake(ctx context.Context, thread, text string) (turnID string, err error)
	// WakeTurn is the status of a turn Wake started (inProgress, completed, interrupted,
	// failed), "" when the thread shows no such turn.
	WakeTurn(ctx context.Context, thread, turnID string) (string, error)
}

// ErrNoWake: a host that cannot wake the owner.
var ErrNoWake = errors.New("the host cannot wake the owner")

// ErrUnknownThread is a thread id the host does not know.
var ErrUnknownThread = errors.New("the host does not know the thread")

// Thread is a thread as the host shows it.
type Thread struct {
	ID             string
	ParentThreadID string // the thread that spawned it; "" for a top-level thread
	AgentRole      string // the agent_type it was spawned with ("" or "default" without one)
	Model          string
	Effort         string
	Cwd            string // the host's cwd for it: a subagent's is its parent's
	RolloutPath    string
	Status         string // idle, active, notLoaded, systemError
	Preview        string // the start of its first user message
	Turns          []Turn // oldest first; nil when read without turns
}

// Turn is one turn of a thread.
type Turn struct {
	ID     string
	Status string // inProgress, completed, interrupted, failed
	// FirstUserMessage is the text of the turn's first user message: where a step's marker is.
	FirstUserMessage string
	// Answer is the turn's answer: its last agent message in the final_answer phase, or, from a
	// provider that sets no phase, its last message when no commentary came before it.
	Answer    string
	HasAnswer bool
	// Error is the turn's error when it failed (or was interrupted with one).
	Error *codex.TurnError
}
