package session

import (
	"fmt"
	"strings"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/session/roles"
)

// Actions a step asks of the owner.
const (
	ActionSpawn     = "spawn"      // spawn_agent, then crw flow dispatched
	ActionSendInput = "send_input" // send_input(target, message), then crw flow dispatched
	ActionClose     = "close"      // close_agent(target)
)

// StepFile is a published step as the owner reads it: steps/<call>/t<k>-a<n>.json under the
// run's folder, or a close step, steps/<call>/close-a<n>-<agent>.json.
type StepFile struct {
	Call            string `json:"call"`
	K               int    `json:"k,omitempty"`
	Attempt         int    `json:"attempt"`
	Op              string `json:"op,omitempty"`
	Marker          string `json:"marker,omitempty"`
	Role            string `json:"role,omitempty"`
	Action          string `json:"action"`
	AgentType       string `json:"agent_type,omitempty"`
	Model           string `json:"model,omitempty"`
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	Message         string `json:"message,omitempty"`
	Packet          string `json:"packet,omitempty"` // absolute
	Workspace       string `json:"workspace,omitempty"`
	AgentID         string `json:"agent_id,omitempty"` // a send_input's or a close's subagent
}

// Marker names one turn of one attempt of a call: <call>/t<k>-a<n>.
func Marker(call string, k, attempt int) string { return fmt.Sprintf("%s/t%d-a%d", call, k, attempt) }

// Op names one turn of a call, whatever the attempt: <call>/t<k>.
func Op(call string, k int) string { return fmt.Sprintf("%s/t%d", call, k) }

// ParseMarker splits a marker; ok is false for anything else.
func ParseMarker(m string) (call string, k, attempt int, ok bool) {
	call, rest, found := strings.Cut(m, "/")
	if !found || !validName(call) {
		return "", 0, 0, false
	}
	if n, err := fmt.Sscanf(rest, "t%d-a%d", &k, &attempt); err != nil || n != 2 || k < 1 || attempt < 1 || Marker(call, k, attempt) != m {
		return "", 0, 0, false
	}
	return call, k, attempt, true
}

// markerLine is the first line of every message the owner sends a subagent for a step.
func markerLine(marker string) string { return "crw-flow-op: " + marker }

// MarkerOf is the marker a message's first line carries, or "".
func MarkerOf(message string) string {
	first, _, _ := strings.Cut(message, "\n")
	m, ok := strings.CutPrefix(strings.TrimRight(first, "\r "), "crw-flow-op: ")
	if !ok {
		return ""
	}
	if _, _, _, valid := ParseMarker(m); !valid {
		return ""
	}
	return m
}

// SpawnMessage is the short message a spawn step sends; the packet holds the rest.
func SpawnMessage(marker, role, workspace, packet string) string {
	return markerLine(marker) + "\n" +
		"CRW-ROLE: " + role + "\n" +
		"\n" +
		"Your shell starts in a directory that is NOT your workspace. Your workspace is " + workspace +
		": run every command with workdir " + workspace + " and edit only by absolute paths under " + workspace + ".\n" +
		"Read the task packet " + packet + " in full and follow it exactly. You are a leaf subagent: never spawn agents.\n" +
		"Your final message is exactly the JSON object the packet names, and nothing else.\n"
}

// SendInputMessage is a send_input step's message: the marker line and the turn's input.
func SendInputMessage(marker, input string) string { return markerLine(marker) + "\n" + input }

// validName is a call id or agent id that is safe as a file name's part.
func validName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// PacketInput is what a packet is made of.
type PacketInput struct {
	Marker    string
	Role      string
	Workspace string
	Env       map[string]string // the run's recorded environment: TMPDIR, tool entries
	RunJSON   string            // the run.json that records it
	Note      string            // what happened to earlier attempts
	// Conversation is what a continuation goes on from (ConversationSection).
	Conversation string
	Task         string // the call's prompt (a repair's packet: the task, the answer and the instruction)
	Schema       string // the output schema, JSON; "" for a text answer
}

// ConversationSection is the part of a continuation's packet that carries the conversation it
// goes on from, as the journal records it: each call's task and answer, oldest first. "" for
// none.
func ConversationSection(ex []backend.Exchange) string {
	if len(ex) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Conversation so far\n\nYou continue this conversation: the earlier turns and their answers, oldest first. Build on them; do not redo them.\n\n")
	for _, e := range ex {
		if len(e.Turns) == 0 {
			// A call that ended before any turn: its task, and how it ended.
			fmt.Fprintf(&b, "### %s: task\n\n%s\n\n### %s: no answer (%s)\n\n", e.Call, e.Prompt, e.Call, e.Status)
			continue
		}
		for i, t := range e.Turns {
			what := "task"
			if t.K > 1 {
				what = "repair"
			}
			fmt.Fprintf(&b, "### %s, turn %d: %s\n\n%s\n\n", e.Call, t.K, what, t.Prompt)
			status := ""
			if i == len(e.Turns)-1 {
				status = " (" + e.Status + ")"
			}
			if t.Answer == "" {
				fmt.Fprintf(&b, "### %s, turn %d: no answer%s\n\n", e.Call, t.K, status)
			} else {
				fmt.Fprintf(&b, "### %s, turn %d: answer%s\n\n%s\n\n", e.Call, t.K, status, t.Answer)
			}
		}
	}
	return b.String()
}

// ContinuesSection names, for a continuation, the call it goes on from: the packet that call
// was given and the file that holds its answer ("" for either when there is none).
func ContinuesSection(call, packet, answerFile string) string {
	var parts []string
	if packet != "" {
		parts = append(parts, "its task packet is "+packet)
	}
	if answerFile != "" {
		parts = append(parts, "its answer is in "+answerFile)
	}
	if len(parts) == 0 {
		return ""
	}
	return "## The call you continue\n\nYou go on from call " + call + ": " + strings.Join(parts, ", and ") + ".\n\n"
}

// Packet is the self-contained task packet of a step, in Markdown.
func Packet(in PacketInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# crw task packet %s (role %s)\n\n", in.Marker, in.Role)
	b.WriteString("## Workspace\n\n")
	fmt.Fprintf(&b, "You work only under the absolute path %s: run every command with workdir %s and edit only by absolute paths under it. "+
		"A role that writes nothing changes nothing. Never run git commit, add, branch, reset or checkout.\n\n", in.Workspace, in.Workspace)
	if overlay := roles.Overlay(in.Role); overlay != "" {
		b.WriteString("## Your role\n\n" + overlay + "\n\n")
	}
	if tools := codex.ToolsSection(in.Env, in.RunJSON); tools != "" {
		b.WriteString(tools + "\n")
	}
	if in.Note != "" {
		b.WriteString("## Earlier attempts\n\n" + in.Note + "\n\n")
	}
	b.WriteString(in.Conversation)
	b.WriteString("## Task\n\n" + in.Task + "\n\n")
	b.WriteString("## Output contract\n\n")
	if in.Schema == "" {
		b.WriteString("Your final message is your answer, as text.\n")
	} else {
		b.WriteString("Your final message is exactly one JSON document that satisfies this JSON Schema, and nothing before or after it:\n\n```json\n" + in.Schema + "\n```\n")
	}
	return b.String()
}
