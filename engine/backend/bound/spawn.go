package bound

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crw-dev/crw/journal"
)

// Event is what Codex's PreToolUse hook gives for a spawn_agent call.
type Event struct {
	SessionID string `json:"session_id"` // the owner thread (a subagent's spawn carries the owner's too)
	TurnID    string `json:"turn_id"`
	ToolName  string `json:"tool_name"`
	ToolUseID string `json:"tool_use_id"`
	// AgentID and AgentType are set only on a spawn by a subagent: its own id and type.
	AgentID   string          `json:"agent_id"`
	AgentType string          `json:"agent_type"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// Decisions of the spawn hook.
const (
	Allow = "allow" // the spawn runs, its model and effort those of its role's pair
	Deny  = "deny"
	Pass  = "pass" // the spawn runs as sent: no binding, or a role the table leaves undecided
)

// Decision is the hook's answer to a spawn, and its ledger line.
type Decision struct {
	At        time.Time    `json:"at"`
	Owner     string       `json:"owner"`
	RunID     string       `json:"run_id,omitempty"`
	ToolUseID string       `json:"tool_use_id,omitempty"`
	TurnID    string       `json:"turn_id,omitempty"`
	Decision  string       `json:"decision"`
	Reason    string       `json:"reason,omitempty"` // why a spawn is denied
	Role      string       `json:"role,omitempty"`
	Op        string       `json:"op,omitempty"` // the marker of the crw-flow-op: first line
	AgentType string       `json:"agent_type,omitempty"`
	Pair      journal.Pair `json:"pair"` // what the spawn runs on, as far as the hook decides it
	Warnings  []string     `json:"warnings,omitempty"`
	// Input is the spawn's arguments after the hook: the whole object Codex takes as updatedInput.
	Input map[string]any `json:"-"`
}

// Output is what the hook prints for Codex: nothing for a spawn that passes as sent.
func (d Decision) Output() []byte {
	var out map[string]any
	switch d.Decision {
	case Deny:
		out = map[string]any{"hookEventName": "PreToolUse", "permissionDecision": "deny",
			"permissionDecisionReason": "crw: " + d.Reason + ": " + denyText[d.Reason]}
	case Allow:
		out = map[string]any{"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": d.Input}
	default:
		return nil
	}
	data, _ := json.Marshal(map[string]any{"hookSpecificOutput": out})
	return data
}

var denyText = map[string]string{
	"leaf_spawn_refused":        "a subagent of a session run is a leaf and never spawns agents",
	"full_history_fork_refused": "a fork of the owner's whole history keeps the owner's pair; spawn with fork_context=false",
}

// agentTypeRole is the role a spawn of an agent type serves when its message names none.
var agentTypeRole = map[string]string{"architect": "architect", "executor": "executor", "worker": "executor", "reviewer": "reviewer", "explorer": "explorer"}

// Decide decides an owner's spawn by the line in force (nil: none). It refuses two: a spawn by
// a subagent and a full-history fork; every other spawn is allowed with the model and effort of
// its role's pair, as far as the line decides them (an undecided effort keeps the spawn's).
// The role is the one the message's first CRW-ROLE: line names when it is one of the six, else
// the agent type's (worker is executor), else explorer.
func Decide(ev Event, line *Line) Decision {
	d := Decision{At: time.Now().UTC(), Owner: ev.SessionID, ToolUseID: ev.ToolUseID, TurnID: ev.TurnID, Decision: Pass}
	var input map[string]any
	if err := json.Unmarshal(ev.ToolInput, &input); err != nil || input == nil {
		d.Warnings = append(d.Warnings, "tool_input_not_an_object")
		return d // nothing crw can rewrite: the spawn passes as sent
	}
	message, _ := input["message"].(string)
	agentType, _ := input["agent_type"].(string)
	d.AgentType, d.Op = agentType, opOf(message)
	header := headerRole(message)
	d.Role = header
	if d.Role == "" {
		d.Role = agentTypeRole[agentType]
	}
	if d.Role == "" {
		d.Role = "explorer"
	}
	switch {
	case header != "" && agentType != "" && agentTypeOf(header) != agentType && !(agentType == "worker" && agentTypeOf(header) == "executor"):
		d.Warnings = append(d.Warnings, "role_agent_type_mismatch")
	}
	if d.Op == "" {
		d.Warnings = append(d.Warnings, "unrecorded_spawn")
		if agentType == "executor" || agentType == "architect" || agentType == "worker" {
			d.Warnings = append(d.Warnings, "unrecorded_author")
		}
	}
	if !line.Open() {
		return d // no run binds the owner: its spawns are its own
	}
	d.RunID = line.RunID
	switch {
	case ev.AgentID != "":
		d.Decision, d.Reason = Deny, "leaf_spawn_refused"
		return d
	case input["fork_context"] == true:
		d.Decision, d.Reason = Deny, "full_history_fork_refused"
		return d
	}
	pair, decided := line.HelperPairs[d.Role]
	if !decided || pair.Model == "" {
		d.Warnings = append(d.Warnings, "role_undecided")
		d.Pair = journal.Pair{Model: str(input["model"]), Effort: str(input["reasoning_effort"])}
		return d
	}
	input["model"] = pair.Model
	if pair.Effort != "" {
		input["reasoning_effort"] = pair.Effort
	}
	d.Decision, d.Input = Allow, input
	d.Pair = journal.Pair{Model: pair.Model, Effort: str(input["reasoning_effort"])}
	return d
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// agentTypeOf is the agent type a role's steps spawn (executor-t1 as executor, critic as
// reviewer), as the session backend's steps do.
func agentTypeOf(role string) string {
	switch role {
	case "executor-t1":
		return "executor"
	case "critic":
		return "reviewer"
	}
	return role
}

// opOf is the marker of a message's crw-flow-op: first line, "" without one.
func opOf(message string) string {
	first, _, _ := strings.Cut(message, "\n")
	op, ok := strings.CutPrefix(strings.TrimSpace(first), "crw-flow-op: ")
	if !ok || len(op) > 200 {
		return ""
	}
	return strings.TrimSpace(op)
}

// headerRole is the role the first CRW-ROLE: line of the message's header names, when it is one
// of the six; the header is the lines before the first blank one.
func headerRole(message string) string {
	for _, line := range strings.Split(message, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			return ""
		}
		if role, ok := strings.CutPrefix(line, "CRW-ROLE:"); ok {
			role = strings.TrimSpace(role)
			if slices.Contains(Roles, role) {
				return role
			}
			return ""
		}
	}
	return ""
}

// Record appends a decision to the owner's ledger, decisions/<owner>.jsonl.
func (s Store) Record(d Decision) error {
	if !ValidThread(d.Owner) {
		return fmt.Errorf("%q is not a thread id", d.Owner)
	}
	if err := s.dir(true); err != nil {
		return err
	}
	dir := Store{Dir: s.Dir + "/decisions"}
	if err := dir.dir(true); err != nil {
		return err
	}
	data, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return appendLine(dir.path(d.Owner), data)
}

// maxLedger bounds how much of a ledger is read back: its newest lines.
const maxLedger = 4 << 20

// Decisions reads back the owner's ledger, its newest lines first read (at most maxLedger
// bytes of them), oldest first; a line that is not a decision is passed over.
func (s Store) Decisions(owner string) ([]Decision, error) {
	if !ValidThread(owner) {
		return nil, fmt.Errorf("%q is not a thread id", owner)
	}
	dir := Store{Dir: s.Dir + "/decisions"}
	if err := s.dir(false); err != nil {
		return nil, err
	}
	if err := dir.dir(false); err != nil {
		return nil, err
	}
	data, err := tail(dir.path(owner), maxLedger)
	if err != nil {
		return nil, err
	}
	var out []Decision
	for _, line := range strings.Split(string(data), "\n") {
		var d Decision
		if line != "" && json.Unmarshal([]byte(line), &d) == nil {
			out = append(out, d)
		}
	}
	return out, nil
}
