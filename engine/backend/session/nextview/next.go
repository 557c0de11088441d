// Package nextview is what crw flow next answers a session run's owner: the steps waiting for it
// with the host call to make for each and the command that reports it, its subagent slots
// (agents.max_threads of its Codex configuration, and the subagents open for the run), the
// spawn format of each role, the run's state and a hint of what to do next.
package nextview

import (
	"fmt"
	"sort"
	"strings"

	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/roles"
	"github.com/crw-dev/crw/journal"
)

// States crw flow next answers.
const (
	StateRunning        = "running"         // the run works; no step waits for the owner
	StateWaitingSession = "waiting_session" // steps wait for the owner
	StatePaused         = "paused"
	StateEnded          = "ended"
	StateStarting       = "starting" // no process has recorded its start yet
	// StateWaitingDecision: the run waits for the answer to a decision (crw flow answer).
	StateWaitingDecision = "waiting_decision"
)

// HostCall is the call the owner makes on its host for a step, with Codex's argument names.
type HostCall struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
}

// NextStep is a step as crw flow next hands it out: the step file's members, the host call to
// make and the command that reports it.
type NextStep struct {
	bus.StepFile
	HostCall HostCall `json:"host_call"`
	Then     string   `json:"then,omitempty"`
}

// Slots are the owner's subagent slots: agents.max_threads, and the subagents open for the run.
type Slots struct {
	Limit  int      `json:"limit"`
	Open   int      `json:"open"`
	Agents []string `json:"agents"`
}

// NextView is crw flow next's answer.
type NextView struct {
	Run          string        `json:"run"`
	State        string        `json:"state"`
	Status       string        `json:"status,omitempty"` // the ended run's status
	Steps        []NextStep    `json:"steps"`
	Slots        Slots         `json:"slots"`
	SpawnFormats []SpawnFormat `json:"spawn_formats"`
	Hint         string        `json:"hint"`
	ResumedPID   int           `json:"resumed_pid,omitempty"`
	// Warnings are what next noticed and recorded nothing of: an owner line that is not the
	// run's.
	Warnings []string `json:"warnings,omitempty"`
	// Decisions are the decisions the run waits for (crw.decide, a tier step's).
	Decisions []journal.PendingDecision `json:"decisions,omitempty"`
}

// WithDecisions is v with the decisions the run waits for, and a hint that names how to
// answer each.
func (v NextView) WithDecisions(ds []journal.PendingDecision) NextView {
	if len(ds) == 0 {
		return v
	}
	v.Decisions = ds
	var h []string
	for _, d := range ds {
		h = append(h, fmt.Sprintf("The run waits for the decision %s (%s): answer it with crw flow answer %s %s --value JSON.", d.ID, d.Question, v.Run, d.ID))
	}
	v.Hint = strings.TrimSpace(strings.Join(h, " ") + " " + v.Hint)
	return v
}

// WithPause is v with the hint of a paused run saying what paused it (a limit, its token
// budget) and how it goes on, in place of the hint of a limit alone.
func (v NextView) WithPause(why, how string) NextView {
	if v.State == StatePaused && why != "" && how != "" {
		v.Hint = strings.Replace(v.Hint, pausedHint(v.Run), "The run is paused by "+why+": "+how+".", 1)
	}
	return v
}

func pausedHint(run string) string {
	return "The run is paused: crw flow resume " + run + " goes on with it when the limit has passed."
}

// SpawnFormat is how a role's subagents are spawned: spawn_agent with the role's agent type and
// the decided parts of the pair the run records for it (a part left out is the host's).
type SpawnFormat struct {
	Role            string `json:"role"`
	AgentType       string `json:"agent_type"`
	Model           string `json:"model,omitempty"`
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	Call            string `json:"call"`
}

// SpawnFormats are the spawn formats of the roles named under the run's role pairs, in the
// order given.
func SpawnFormats(names []string, pairs map[string]journal.Pair) []SpawnFormat {
	out := make([]SpawnFormat, 0, len(names))
	for _, role := range names {
		p := pairs[role]
		f := SpawnFormat{Role: role, AgentType: roles.AgentType(role), Model: p.Model, ReasoningEffort: p.Effort}
		args := []string{fmt.Sprintf("agent_type=%q", f.AgentType), "message"}
		if f.Model != "" {
			args = append(args, fmt.Sprintf("model=%q", f.Model))
		}
		if f.ReasoningEffort != "" {
			args = append(args, fmt.Sprintf("reasoning_effort=%q", f.ReasoningEffort))
		}
		f.Call = "spawn_agent(" + strings.Join(append(args, "fork_context=false"), ", ") + ")"
		out = append(out, f)
	}
	return out
}

// Next builds crw flow next's answer from the run's state and its bus: the published steps and
// the subagents bound to open calls (bus.Bus.Read); formats are the roles' spawn formats.
func Next(run, state, status string, steps []bus.StepFile, agents []string, maxThreads int, formats []SpawnFormat) NextView {
	v := NextView{Run: run, State: state, Status: status, Steps: []NextStep{}, SpawnFormats: formats}
	if v.SpawnFormats == nil {
		v.SpawnFormats = []SpawnFormat{}
	}
	v.Slots.Limit = maxThreads
	v.Slots.Agents = append([]string{}, agents...)
	closing := []string{}
	for _, st := range steps {
		ns := NextStep{StepFile: st}
		switch st.Action {
		case bus.ActionSpawn:
			args := map[string]any{"agent_type": st.AgentType, "message": st.Message, "fork_context": false}
			if st.Model != "" {
				args["model"] = st.Model
			}
			if st.ReasoningEffort != "" {
				args["reasoning_effort"] = st.ReasoningEffort
			}
			ns.HostCall = HostCall{Tool: "spawn_agent", Arguments: args}
			ns.Then = fmt.Sprintf("crw flow dispatched %s %s --agent <agent_id> --k %d --attempt %d", run, st.Call, st.K, st.Attempt)
		case bus.ActionSendInput:
			ns.HostCall = HostCall{Tool: "send_input", Arguments: map[string]any{"target": st.AgentID, "message": st.Message}}
			ns.Then = fmt.Sprintf("crw flow dispatched %s %s --agent %s --k %d --attempt %d", run, st.Call, st.AgentID, st.K, st.Attempt)
		case bus.ActionClose:
			ns.HostCall = HostCall{Tool: "close_agent", Arguments: map[string]any{"target": st.AgentID}}
			closing = append(closing, st.AgentID)
			if !contains(v.Slots.Agents, st.AgentID) {
				v.Slots.Agents = append(v.Slots.Agents, st.AgentID)
			}
		default:
			continue
		}
		v.Steps = append(v.Steps, ns)
	}
	sort.Strings(v.Slots.Agents)
	v.Slots.Open = len(v.Slots.Agents)
	if v.State == StateRunning && len(v.Steps) > len(closing) {
		v.State = StateWaitingSession
	}
	v.Hint = hint(v, closing)
	return v
}

func hint(v NextView, closing []string) string {
	var h []string
	switch v.State {
	case StateEnded:
		h = append(h, "The run ended ("+v.Status+"): nothing more to do.")
	case StatePaused:
		h = append(h, pausedHint(v.Run))
	case StateStarting:
		h = append(h, "The run is starting: ask again.")
	}
	if v.ResumedPID != 0 {
		h = append(h, fmt.Sprintf("No process held the run: it was resumed (pid %d), as crw flow resume --detach does.", v.ResumedPID))
	}
	if len(closing) > 0 {
		h = append(h, "First close_agent each of "+strings.Join(closing, ", ")+".")
	}
	waiting := len(v.Steps) - len(closing)
	switch {
	case waiting > 0 && v.Slots.Open-len(closing) >= v.Slots.Limit-1:
		h = append(h, "The subagent slots are full (agents.max_threads): wait_agent on the open subagents, then crw flow next again; the steps stay.")
	case waiting > 0:
		h = append(h, "For each step make its host_call, then run its then command with the agent_id the host returned.")
	}
	if v.State != StateEnded && v.State != StatePaused && v.State != StateWaitingDecision {
		targets := "the open subagents"
		if len(v.Slots.Agents) > 0 {
			targets = strings.Join(v.Slots.Agents, ", ")
		}
		h = append(h, "Then alternate wait_agent(targets: "+targets+", timeout_ms: 30000) with crw flow next "+v.Run+" --wait 30s until the run ends.")
	}
	return strings.Join(h, " ")
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
