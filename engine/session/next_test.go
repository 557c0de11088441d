package session_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/session"
	"github.com/crw-dev/crw/journal"
)

func TestNextHandsOutHostCalls(t *testing.T) {
	steps := []session.StepFile{
		{Call: "c2", K: 1, Attempt: 1, Marker: "c2/t1-a1", Action: session.ActionSpawn, AgentType: "reviewer", Model: "m", ReasoningEffort: "high", Message: "crw-flow-op: c2/t1-a1\n..."},
		{Call: "c1", K: 2, Attempt: 1, Marker: "c1/t2-a1", Action: session.ActionSendInput, AgentID: "agent-1", Message: "crw-flow-op: c1/t2-a1\nfix it"},
		{Call: "c0", Attempt: 1, Action: session.ActionClose, AgentID: "agent-0"},
	}
	rows := []journal.Row{
		{Type: journal.TypePrepared, Call: "c1"},
		{Type: journal.TypeThreadStarted, Call: "c1", ThreadID: "agent-1", Via: "session"},
		{Type: journal.TypePrepared, Call: "c0"},
		{Type: journal.TypeThreadStarted, Call: "c0", ThreadID: "agent-0", Via: "session"},
		{Type: journal.TypeCompleted, Call: "c0"},
	}
	v := session.Next("r1", session.StateRunning, "", steps, rows, 6)
	assert.Equal(t, session.StateWaitingSession, v.State)
	require.Len(t, v.Steps, 3)
	assert.Equal(t, session.HostCall{Tool: "spawn_agent", Arguments: map[string]any{
		"agent_type": "reviewer", "message": "crw-flow-op: c2/t1-a1\n...", "model": "m", "reasoning_effort": "high", "fork_context": false}}, v.Steps[0].HostCall)
	assert.Equal(t, "crw flow dispatched r1 c2 --agent <agent_id> --k 1 --attempt 1", v.Steps[0].Then)
	assert.Equal(t, session.HostCall{Tool: "send_input", Arguments: map[string]any{"target": "agent-1", "message": "crw-flow-op: c1/t2-a1\nfix it"}}, v.Steps[1].HostCall)
	assert.Equal(t, "crw flow dispatched r1 c1 --agent agent-1 --k 2 --attempt 1", v.Steps[1].Then)
	assert.Equal(t, session.HostCall{Tool: "close_agent", Arguments: map[string]any{"target": "agent-0"}}, v.Steps[2].HostCall)
	assert.Equal(t, session.Slots{Limit: 6, Open: 2, Agents: []string{"agent-0", "agent-1"}}, v.Slots)
	assert.Contains(t, v.Hint, "First close_agent each of agent-0.")
	assert.Contains(t, v.Hint, "wait_agent(targets: agent-0, agent-1")

	full := session.Next("r1", session.StateRunning, "", steps[:1], rows, 2)
	assert.Contains(t, full.Hint, "slots are full")

	idle := session.Next("r1", session.StateRunning, "", nil, rows, 6)
	assert.Equal(t, session.StateRunning, idle.State)
	assert.Empty(t, idle.Steps)
	ended := session.Next("r1", session.StateEnded, "completed", nil, rows, 6)
	assert.Contains(t, ended.Hint, "The run ended (completed)")
	assert.NotContains(t, ended.Hint, "wait_agent")
}

func TestMarkers(t *testing.T) {
	call, k, n, ok := session.ParseMarker("c12/t2-a3")
	assert.True(t, ok)
	assert.Equal(t, []any{"c12", 2, 3}, []any{call, k, n})
	for _, bad := range []string{"", "c1", "c1/t0-a1", "c1/t1-a0", "../x/t1-a1", "c1/t1-a1x", "c1/t01-a1", "c 1/t1-a1"} {
		_, _, _, ok := session.ParseMarker(bad)
		assert.False(t, ok, bad)
	}
	assert.Equal(t, "c1/t1-a1", session.MarkerOf("crw-flow-op: c1/t1-a1\nCRW-ROLE: x"))
	assert.Equal(t, "", session.MarkerOf("hello\ncrw-flow-op: c1/t1-a1"))
	assert.Equal(t, "", session.MarkerOf("crw-flow-op: ../../etc"))
	assert.Equal(t, "executor", session.AgentType("executor-t1"))
	assert.Equal(t, "reviewer", session.AgentType("critic"))
	assert.Equal(t, "architect", session.AgentType("architect"))
}

func TestSpawnMessageIsTheSeeds(t *testing.T) {
	got := session.SpawnMessage("c1/t1-a1", "reviewer", "/w/P", "/w/steps/c1/packet-t1-a1.md")
	want := "crw-flow-op: c1/t1-a1\nCRW-ROLE: reviewer\n\n" +
		"Your shell starts in a directory that is NOT your workspace. Your workspace is /w/P: run every command with workdir /w/P and edit only by absolute paths under /w/P.\n" +
		"Read the task packet /w/steps/c1/packet-t1-a1.md in full and follow it exactly. You are a leaf subagent: never spawn agents.\n" +
		"Your final message is exactly the JSON object the packet names, and nothing else.\n"
	assert.Equal(t, want, got)
}

func TestBusReportsAndReplies(t *testing.T) {
	bus := session.Bus{Dir: t.TempDir()}
	for _, bad := range []session.Report{{Call: "../c1", Agent: "a", K: 1, Attempt: 1}, {Call: "c1", Agent: "a/b", K: 1, Attempt: 1}, {Call: "c1", Agent: "a", K: 0, Attempt: 1}} {
		_, err := bus.Dispatch(bad)
		assert.Error(t, err, "%+v", bad)
	}
	r1, err := bus.Dispatch(session.Report{Run: "r", Call: "c1", Agent: "a1", K: 1, Attempt: 1})
	require.NoError(t, err)
	r2, err := bus.Dispatch(session.Report{Run: "r", Call: "c2", Agent: "a2", K: 1, Attempt: 1})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(bus.Dir, "inbox", "junk.json"), []byte("{"), 0o600))
	got, err := bus.Inbox()
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, []string{r1.ID, r2.ID}, []string{got[0].ID, got[1].ID}, "oldest first")
	assert.NoFileExists(t, filepath.Join(bus.Dir, "inbox", "junk.json"), "what is not a report is removed")
	_, ok, err := bus.ReplyTo(r1.ID)
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, bus.Answer(r1, session.Reply{Reply: session.ReplyBound, Marker: "c1/t1-a1", Agent: "a1"}))
	reply, ok, err := bus.ReplyTo(r1.ID)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, session.ReplyBound, reply.Reply)
	got, _ = bus.Inbox()
	assert.Len(t, got, 1, "an answered report leaves the inbox")
}

// BenchmarkNextAt1000Calls is what crw flow next computes for a run of 1,000 session calls
// (5,000 rows) with 3 steps waiting: the journal's rows are read by the command besides.
func BenchmarkNextAt1000Calls(b *testing.B) {
	var rows []journal.Row
	for i := 1; i <= 1000; i++ {
		call := fmt.Sprint("c", i)
		rows = append(rows, journal.Row{Type: journal.TypePrepared, Call: call}, journal.Row{Type: journal.TypeStepPublished, Call: call},
			journal.Row{Type: journal.TypeThreadStarted, Call: call, ThreadID: "agent-" + call, Via: "session"},
			journal.Row{Type: journal.TypeTurnStarted, Call: call})
		if i <= 997 {
			rows = append(rows, journal.Row{Type: journal.TypeCompleted, Call: call})
		}
	}
	steps := []session.StepFile{{Call: "c998", K: 2, Attempt: 1, Marker: "c998/t2-a1", Action: session.ActionSendInput, AgentID: "agent-c998"},
		{Call: "c999", K: 1, Attempt: 1, Marker: "c999/t1-a1", Action: session.ActionSpawn, AgentType: "reviewer"},
		{Call: "c1", Attempt: 1, Action: session.ActionClose, AgentID: "agent-c1"}}
	for b.Loop() {
		v := session.Next("r1", session.StateRunning, "", steps, rows, 6)
		if v.Slots.Open != 4 {
			b.Fatalf("open slots %d", v.Slots.Open)
		}
	}
}
