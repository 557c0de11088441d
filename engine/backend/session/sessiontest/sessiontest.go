// Package sessiontest plays the other side of the session backend, for tests: a Host with the
// read API of Codex's app server, and an Owner that takes the run's steps as an owner thread
// would (spawn_agent or send_input, then crw flow dispatched; close_agent for a close step).
package sessiontest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/host"
)

// Host is an in-memory host: the owner's subagents and their turns.
type Host struct {
	Owner string
	// RolloutDir, when set, is where each subagent's rollout is written: an ended turn appends
	// its token_usage_record (input 10, output the answer's length). Without it the host has
	// no rollouts and a turn's tokens cannot be measured.
	RolloutDir string

	mu         sync.Mutex
	threads    map[string]*host.Thread
	closed     map[string]bool
	order      []string
	n          int
	Interrupts int  // turn/interrupt requests received
	Down       bool // every read fails as an unreachable host's would

	// OwnerStates is each top-level thread's status for OwnerStatus (default idle); WakeErr
	// fails each wake; wakes are the texts of the turns Wake started.
	OwnerStates map[string]string
	// OwnerCwd is the owner thread's working directory (ThreadCwd).
	OwnerCwd  string
	WakeErr   error
	wakes     []string
	wakeTurns map[string]string // each wake's turn (wake-<n>) and its status

	spawns   []host.Spawn
	unlisted map[string]bool
}

// OwnerSpawns implements host.OwnerSpawner: the spawn calls that made the owner's subagents,
// call-<n> for the n-th.
func (h *Host) OwnerSpawns(_ context.Context, owner string) ([]host.Spawn, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []host.Spawn
	for _, sp := range h.spawns {
		if h.threads[sp.Agent].ParentThreadID == owner {
			out = append(out, sp)
		}
	}
	return out, nil
}

// Unlist keeps a subagent out of Subagents, as a listing that no longer reaches it would.
func (h *Host) Unlist(agent string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.unlisted == nil {
		h.unlisted = map[string]bool{}
	}
	h.unlisted[agent] = true
}

// OwnerStatus implements host.Waker.
func (h *Host) OwnerStatus(_ context.Context, thread string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st, ok := h.OwnerStates[thread]; ok {
		return st, nil
	}
	return "idle", nil
}

// SetOwnerState sets a thread's status for OwnerStatus.
func (h *Host) SetOwnerState(thread, status string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.OwnerStates == nil {
		h.OwnerStates = map[string]string{}
	}
	h.OwnerStates[thread] = status
}

// Wake implements host.Waker: it records the turn's text and starts its turn, wake-<n>,
// in progress until EndWakes.
func (h *Host) Wake(_ context.Context, thread, text string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.WakeErr != nil {
		return "", h.WakeErr
	}
	h.wakes = append(h.wakes, thread+": "+text)
	if h.wakeTurns == nil {
		h.wakeTurns = map[string]string{}
	}
	id := fmt.Sprintf("wake-%d", len(h.wakes))
	h.wakeTurns[id] = "inProgress"
	return id, nil
}

// ThreadCwd implements host.CwdReader: OwnerCwd for the owner, a subagent's own otherwise.
func (h *Host) ThreadCwd(_ context.Context, thread string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if thread == h.Owner {
		return h.OwnerCwd, nil
	}
	if th, ok := h.threads[thread]; ok {
		return th.Cwd, nil
	}
	return "", host.ErrUnknownThread
}

// WakeTurn implements host.Waker.
func (h *Host) WakeTurn(_ context.Context, _, turnID string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wakeTurns[turnID], nil
}

// EndWakes ends the wake turns in progress with status (completed, interrupted, failed).
func (h *Host) EndWakes(status string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, s := range h.wakeTurns {
		if s == "inProgress" {
			h.wakeTurns[id] = status
		}
	}
}

// Wakes are the wakes so far.
func (h *Host) Wakes() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.wakes...)
}

// NewHost is a host whose owner thread is owner.
func NewHost(owner string) *Host {
	return &Host{Owner: owner, threads: map[string]*host.Thread{}, closed: map[string]bool{}}
}

// ReadThread implements host.Host.
func (h *Host) ReadThread(_ context.Context, id string) (host.Thread, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.Down {
		return host.Thread{}, fmt.Errorf("host unreachable")
	}
	th, ok := h.threads[id]
	if !ok {
		return host.Thread{}, host.ErrUnknownThread
	}
	cp := *th
	cp.Turns = append([]host.Turn(nil), th.Turns...)
	return cp, nil
}

// Subagents implements host.Host.
func (h *Host) Subagents(context.Context) ([]host.Thread, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.Down {
		return nil, fmt.Errorf("host unreachable")
	}
	var out []host.Thread
	for _, id := range h.order {
		if h.unlisted[id] {
			continue
		}
		cp := *h.threads[id]
		cp.Turns = nil
		out = append(out, cp)
	}
	return out, nil
}

// InterruptTurn implements host.Host: a running turn ends interrupted.
func (h *Host) InterruptTurn(_ context.Context, threadID, turnID string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Interrupts++
	if th, ok := h.threads[threadID]; ok {
		for i := range th.Turns {
			if th.Turns[i].ID == turnID && th.Turns[i].Status == "inProgress" {
				th.Turns[i].Status = "interrupted"
			}
		}
	}
	return nil
}

// Close implements host.Host.
func (h *Host) Close() error { return nil }

// Progress is a subagent at work: a line appended to its rollout (RolloutDir must be set).
func (h *Host) Progress(agent string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if th, ok := h.threads[agent]; ok && h.RolloutDir != "" {
		if f, err := os.OpenFile(th.RolloutPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			_, _ = f.WriteString(`{"type":"response_item","payload":{}}` + "\n")
			_ = f.Close()
		}
	}
}

// Private is the host as a private app server on the owner's CODEX_HOME reads it, from disk
// (RolloutDir must be set): a subagent reads notLoaded whether it runs or was closed, its
// in-flight turn interrupted; one whose rollout is not written yet is unknown; and no turn can be
// interrupted.
type Private struct{ *Host }

// ReadThread implements host.Host.
func (p Private) ReadThread(ctx context.Context, id string) (host.Thread, error) {
	th, err := p.Host.ReadThread(ctx, id)
	if err != nil {
		return th, err
	}
	if _, err := os.Stat(th.RolloutPath); err != nil {
		return host.Thread{}, host.ErrUnknownThread
	}
	return onDisk(th), nil
}

// Subagents implements host.Host.
func (p Private) Subagents(ctx context.Context) ([]host.Thread, error) {
	all, err := p.Host.Subagents(ctx)
	var out []host.Thread
	for _, th := range all {
		if _, err := os.Stat(th.RolloutPath); err == nil {
			out = append(out, onDisk(th))
		}
	}
	return out, err
}

// InterruptTurn implements host.Host: it cannot reach the owner's turns.
func (p Private) InterruptTurn(context.Context, string, string) error {
	return fmt.Errorf("a private app server cannot interrupt the owner's turns")
}

func onDisk(th host.Thread) host.Thread {
	th.Status = "notLoaded"
	for i := range th.Turns {
		if th.Turns[i].Status == "inProgress" {
			th.Turns[i].Status = "interrupted"
		}
	}
	return th
}

// Find is the newest subagent whose first message carries marker, with its last turn.
func (h *Host) Find(marker string) (agent, turn string, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range h.order {
		th := h.threads[id]
		if bus.MarkerOf(th.Preview) == marker && len(th.Turns) > 0 {
			agent, turn, ok = id, th.Turns[len(th.Turns)-1].ID, true
		}
	}
	return agent, turn, ok
}

// Spawn makes a subagent of parent that runs message as its first turn, in progress.
func (h *Host) Spawn(parent, agentType, model, effort, message string) (agent, turn string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	agent = fmt.Sprintf("agent-%d", h.n)
	turn = fmt.Sprintf("turn-%d", h.n)
	h.threads[agent] = &host.Thread{ID: agent, ParentThreadID: parent, AgentRole: agentType, Model: model, Effort: effort,
		Cwd: "/owner/cwd", RolloutPath: h.rollout(agent), Status: "active", Preview: message,
		Turns: []host.Turn{{ID: turn, Status: "inProgress", FirstUserMessage: message}}}
	h.order = append(h.order, agent)
	h.spawns = append(h.spawns, host.Spawn{CallID: fmt.Sprintf("call-%d", h.n), Agent: agent, Prompt: message})
	return agent, turn
}

func (h *Host) rollout(agent string) string {
	if h.RolloutDir == "" {
		return "/rollouts/" + agent + ".jsonl"
	}
	return filepath.Join(h.RolloutDir, "rollout-"+agent+".jsonl")
}

// Send starts a new turn on a subagent.
func (h *Host) Send(agent, message string) (turn string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	th, ok := h.threads[agent]
	if !ok || th.Status == "closed" {
		return "", fmt.Errorf("agent with id %s not found", agent)
	}
	h.n++
	turn = fmt.Sprintf("turn-%d", h.n)
	th.Status = "active"
	th.Turns = append(th.Turns, host.Turn{ID: turn, Status: "inProgress", FirstUserMessage: message})
	return turn, nil
}

// End ends a turn: with an answer, or failed with a codexErrorInfo when info is not "".
func (h *Host) End(agent, turn, answer, info string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	th := h.threads[agent]
	for i := range th.Turns {
		if th.Turns[i].ID == turn && th.Turns[i].Status == "inProgress" {
			if info != "" {
				th.Turns[i].Status = "failed"
				th.Turns[i].Error = &codex.TurnError{Message: "turn failed", CodexErrorInfo: []byte(`"` + info + `"`)}
			} else {
				th.Turns[i].Status = "completed"
				th.Turns[i].Answer, th.Turns[i].HasAnswer = answer, true
			}
			if h.RolloutDir != "" {
				out := len(answer)
				line := fmt.Sprintf(`{"type":"token_usage_record","payload":{"turn_id":%q,"turn_token_usage":{"input_tokens":10,"output_tokens":%d,"total_tokens":%d}}}`+"\n", turn, out, 10+out)
				if f, err := os.OpenFile(th.RolloutPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
					_, _ = f.WriteString(line)
					_ = f.Close()
				}
			}
		}
	}
	th.Status = "idle"
}

// Lose drops a subagent mid-turn: its thread reads notLoaded, its turn interrupted.
func (h *Host) Lose(agent, turn string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	th := h.threads[agent]
	for i := range th.Turns {
		if th.Turns[i].ID == turn {
			th.Turns[i].Status = "interrupted"
		}
	}
	th.Status = "notLoaded"
}

// CloseAgent closes a subagent as Codex's close_agent does: its thread reads notLoaded, a turn
// it was running interrupted.
func (h *Host) CloseAgent(agent string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if th, ok := h.threads[agent]; ok {
		th.Status = "notLoaded"
		for i := range th.Turns {
			if th.Turns[i].Status == "inProgress" {
				th.Turns[i].Status = "interrupted"
			}
		}
		h.closed[agent] = true
	}
}

// Closed reports whether a subagent was closed.
func (h *Host) Closed(agent string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed[agent]
}

// Answer is how the owner's subagent answers a step: Text, or a failure's codexErrorInfo.
// Hold leaves the turn running.
type Answer struct {
	Text  string
	Info  string
	Hold  bool
	Model string // spawn with this model instead of the step's
	// Parent spawns the subagent under this thread instead of the owner's.
	Parent string
	// Lose has the host drop the subagent mid-turn (as a restarted app server does): its thread
	// reads notLoaded and its turn interrupted.
	Lose bool
	// Unreported leaves this step's report unsent, as Owner.Silent does for every step.
	Unreported bool
}

// Owner plays the owner thread of a run.
type Owner struct {
	Host   *Host
	Bus    bus.Bus
	Run    string
	Answer func(bus.StepFile) Answer
	// Silent leaves spawns unreported: the run must find them by their marker.
	Silent bool
	// NoteCloses notes each close step in the inbox as it takes it, as crw flow next does for a
	// run on a private host.
	NoteCloses bool
	// KeepOpen leaves the subagents of close steps open (the owner has not got to them).
	KeepOpen bool

	mu      sync.Mutex
	taken   map[string]bool
	Spawned []string // markers spawned, in order
	// Replies are the replies read, in order (AllReplies reads them safely).
	Replies []bus.Reply
}

// Pass takes every published step not taken yet; it returns how many it took.
func (o *Owner) Pass() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.taken == nil {
		o.taken = map[string]bool{}
	}
	steps, _, _ := o.Bus.Steps()
	// An owner remembers a step while `next` shows it: a step published again after it was
	// gone is a new step to it, and is spawned again.
	shown := map[string]bool{}
	for _, st := range steps {
		shown[st.Marker] = true
		if st.Action == bus.ActionClose {
			shown["close:"+st.AgentID] = true
		}
	}
	for m := range o.taken {
		if !shown[m] {
			delete(o.taken, m)
		}
	}
	took := 0
	for _, st := range steps {
		if st.Action == bus.ActionClose {
			// As a real owner: close_agent only; the run retracts the step once it sees it.
			if !o.Host.Closed(st.AgentID) && !o.KeepOpen {
				o.Host.CloseAgent(st.AgentID)
			}
			if o.NoteCloses && !o.taken["close:"+st.AgentID] {
				o.taken["close:"+st.AgentID] = true
				_ = o.Bus.HandedOut(o.Run, st)
			}
			continue
		}
		if o.taken[st.Marker] {
			continue
		}
		o.taken[st.Marker] = true
		took++
		ans := o.Answer(st)
		var agent, turn string
		switch st.Action {
		case bus.ActionSpawn:
			model := st.Model
			if ans.Model != "" {
				model = ans.Model
			}
			agent, turn = o.Host.Spawn(or(ans.Parent, o.Host.Owner), st.AgentType, or(model, "host-model"), or(st.ReasoningEffort, "medium"), st.Message)
			o.Spawned = append(o.Spawned, st.Marker)
		case bus.ActionSendInput:
			var err error
			if turn, err = o.Host.Send(st.AgentID, st.Message); err != nil {
				continue
			}
			agent = st.AgentID
		}
		switch {
		case ans.Lose:
			o.Host.Lose(agent, turn)
		case !ans.Hold:
			o.Host.End(agent, turn, ans.Text, ans.Info)
		}
		if !o.Silent && !ans.Unreported {
			if r, err := o.Bus.Dispatch(bus.Report{Run: o.Run, Call: st.Call, Agent: agent, K: st.K, Attempt: st.Attempt}); err == nil {
				go o.await(r.ID, st.Marker, agent)
			}
		}
	}
	return took
}

// await reads the reply to a report; a pair_mismatch or a refusal has the subagent closed and
// the step taken again, as the hint tells an owner. It waits for the reply as long as a test
// may run on a loaded machine: the run answers when it gets to the report.
func (o *Owner) await(id, marker, agent string) {
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		if reply, ok, _ := o.Bus.ReplyTo(id); ok {
			o.mu.Lock()
			o.Replies = append(o.Replies, reply)
			if reply.Reply == bus.ReplyPairMismatch || reply.Reply == bus.ReplyRefused {
				o.Host.CloseAgent(agent)
				delete(o.taken, marker)
			}
			o.mu.Unlock()
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Loop passes every few milliseconds until ctx ends.
func (o *Owner) Loop(ctx context.Context) {
	for ctx.Err() == nil {
		o.Pass()
		time.Sleep(5 * time.Millisecond)
	}
}

// AllReplies is every reply the owner read, in order.
func (o *Owner) AllReplies() []bus.Reply {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]bus.Reply(nil), o.Replies...)
}

// RepliesOf is the replies the owner read, by kind.
func (o *Owner) RepliesOf(kind string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, r := range o.Replies {
		if r.Reply == kind {
			n++
		}
	}
	return n
}

func or(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// StepsDir is where a run folder's steps are.
func StepsDir(runDir string) string { return filepath.Join(runDir, "steps") }
