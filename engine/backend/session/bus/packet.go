package bus

import (
	"fmt"
	"strings"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/session/roles"
)

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
