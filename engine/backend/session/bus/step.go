package bus

import (
	"fmt"
	"strings"
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
	if !found || !ValidName(call) {
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

// ValidName is a call id or agent id that is safe as a file name's part.
func ValidName(s string) bool {
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
