package nextview_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/nextview"
	"github.com/crw-dev/crw/journal"
)

func TestNextHandsOutHostCalls(t *testing.T) {
	steps := []bus.StepFile{
		{Call: "c2", K: 1, Attempt: 1, Marker: "c2/t1-a1", Action: bus.ActionSpawn, AgentType: "reviewer", Model: "m", ReasoningEffort: "high", Message: "crw-flow-op: c2/t1-a1\n..."},
		{Call: "c1", K: 2, Attempt: 1, Marker: "c1/t2-a1", Action: bus.ActionSendInput, AgentID: "agent-1", Message: "crw-flow-op: c1/t2-a1\nfix it"},
		{Call: "c0", Attempt: 1, Action: bus.ActionClose, AgentID: "agent-0"},
	}
	agents := []string{"agent-1"} // c1's subagent; c0 has ended, its subagent waits for its close
	v := nextview.Next("r1", nextview.StateRunning, "", steps, agents, 6, nil)
	assert.Equal(t, nextview.StateWaitingSession, v.State)
	require.Len(t, v.Steps, 3)
	assert.Equal(t, nextview.HostCall{Tool: "spawn_agent", Arguments: map[string]any{
		"agent_type": "reviewer", "message": "crw-flow-op: c2/t1-a1\n...", "model": "m", "reasoning_effort": "high", "fork_context": false}}, v.Steps[0].HostCall)
	assert.Equal(t, "crw flow dispatched r1 c2 --agent <agent_id> --k 1 --attempt 1", v.Steps[0].Then)
	assert.Equal(t, nextview.HostCall{Tool: "send_input", Arguments: map[string]any{"target": "agent-1", "message": "crw-flow-op: c1/t2-a1\nfix it"}}, v.Steps[1].HostCall)
	assert.Equal(t, "crw flow dispatched r1 c1 --agent agent-1 --k 2 --attempt 1", v.Steps[1].Then)
	assert.Equal(t, nextview.HostCall{Tool: "close_agent", Arguments: map[string]any{"target": "agent-0"}}, v.Steps[2].HostCall)
	assert.Equal(t, nextview.Slots{Limit: 6, Open: 2, Agents: []string{"agent-0", "agent-1"}}, v.Slots)
	assert.Contains(t, v.Hint, "First close_agent each of agent-0.")
	assert.Contains(t, v.Hint, "wait_agent(targets: agent-0, agent-1, timeout_ms: 30000) with crw flow next r1 --wait 30s until the run ends.")

	full := nextview.Next("r1", nextview.StateRunning, "", steps[:1], agents, 2, nil)
	assert.Contains(t, full.Hint, "slots are full")

	idle := nextview.Next("r1", nextview.StateRunning, "", nil, agents, 6, nil)
	assert.Equal(t, nextview.StateRunning, idle.State)
	assert.Empty(t, idle.Steps)
	ended := nextview.Next("r1", nextview.StateEnded, "completed", nil, agents, 6, nil)
	assert.Contains(t, ended.Hint, "The run ended (completed)")
	assert.NotContains(t, ended.Hint, "wait_agent")
	paused := nextview.Next("r1", nextview.StatePaused, "", nil, agents, 6, nil)
	assert.NotContains(t, paused.Hint, "wait_agent", "next --wait returns at once on a paused run: no loop to alternate")
}

// BenchmarkNextAt1000Calls is what crw flow next does for a run of 1,000 session calls: it
// reads the bus (1,000 call folders, each with its packet; 3 steps waiting, 2 subagents bound)
// and builds its answer. It reads no journal row.
func BenchmarkNextAt1000Calls(b *testing.B) {
	sb := bus.Bus{Dir: b.TempDir()}
	for i := 1; i <= 1000; i++ {
		call := fmt.Sprint("c", i)
		st := bus.StepFile{Call: call, K: 1, Attempt: 1, Marker: call + "/t1-a1", Action: bus.ActionSpawn, AgentType: "reviewer",
			Packet: sb.PacketPath(call, 1, 1)}
		require.NoError(b, sb.Publish(st, "packet of "+call))
		switch {
		case i <= 997:
			require.NoError(b, sb.Retract(call, 1, 1))
		case i <= 999:
			require.NoError(b, sb.Retract(call, 1, 1))
			require.NoError(b, sb.MarkBound(call, 1, "agent-"+call))
		}
	}
	require.NoError(b, sb.CloseAgent("c1", 1, "agent-c1"))
	for b.Loop() {
		steps, _, agents, err := sb.Read()
		require.NoError(b, err)
		v := nextview.Next("r1", nextview.StateRunning, "", steps, agents, 6, nil)
		if len(v.Steps) != 2 || v.Slots.Open != 3 {
			b.Fatalf("steps %d, open slots %d", len(v.Steps), v.Slots.Open)
		}
	}
}

func TestSpawnFormatsNameTheDecidedPartsOfEachRole(t *testing.T) {
	got := nextview.SpawnFormats([]string{"executor-t1", "critic", "explorer"}, map[string]journal.Pair{
		"executor-t1": {Model: "gpt-x", Effort: "high"}, "critic": {Model: "gpt-y"}})
	assert.Equal(t, []nextview.SpawnFormat{
		{Role: "executor-t1", AgentType: "executor", Model: "gpt-x", ReasoningEffort: "high",
			Call: `spawn_agent(agent_type="executor", message, model="gpt-x", reasoning_effort="high", fork_context=false)`},
		{Role: "critic", AgentType: "reviewer", Model: "gpt-y", Call: `spawn_agent(agent_type="reviewer", message, model="gpt-y", fork_context=false)`},
		{Role: "explorer", AgentType: "explorer", Call: `spawn_agent(agent_type="explorer", message, fork_context=false)`},
	}, got)
	v := nextview.Next("r1", nextview.StateRunning, "", nil, nil, 6, got)
	assert.Equal(t, got, v.SpawnFormats)
	assert.Equal(t, []nextview.SpawnFormat{}, nextview.Next("r1", nextview.StateRunning, "", nil, nil, 6, nil).SpawnFormats)
}

// TestNextNamesTheDecisionsARunWaitsFor: a run that waits for a decision says which, and how
// to answer it, before anything else; it asks for no wait loop.
func TestNextNamesTheDecisionsARunWaitsFor(t *testing.T) {
	v := nextview.Next("r1", nextview.StateWaitingDecision, "", nil, nil, 6, nil).
		WithDecisions([]journal.PendingDecision{{ID: "keep", Question: "Keep the change?"}})
	assert.Equal(t, "waiting_decision", v.State)
	assert.Equal(t, []journal.PendingDecision{{ID: "keep", Question: "Keep the change?"}}, v.Decisions)
	assert.Equal(t, "The run waits for the decision keep (Keep the change?): answer it with crw flow answer r1 keep --value JSON.", v.Hint)
	running := nextview.Next("r1", nextview.StateRunning, "", nil, nil, 6, nil)
	assert.Equal(t, running, running.WithDecisions(nil))
}

// TestNextSaysWhatPausedTheRun: a paused run's hint says what paused it and how it goes on, as
// its status says (its token budget: a resume with a larger one); a run that is not paused
// keeps its hint.
func TestNextSaysWhatPausedTheRun(t *testing.T) {
	why, how := "its token budget of 10", "crw flow resume r1 --budget-tokens N with N above the 12 tokens it has spent (0: no budget)"
	v := nextview.Next("r1", nextview.StatePaused, "", nil, nil, 6, nil).WithPause(why, how)
	assert.Equal(t, "The run is paused by its token budget of 10: crw flow resume r1 --budget-tokens N with N above the 12 tokens it has spent (0: no budget).", v.Hint)
	running := nextview.Next("r1", nextview.StateRunning, "", nil, nil, 6, nil)
	assert.Equal(t, running, running.WithPause(why, how))
}
