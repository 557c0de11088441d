package session_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/engine/backend/session/roles"
	"github.com/crw-dev/crw/journal"
)

func TestNextHandsOutHostCalls(t *testing.T) {
	steps := []session.StepFile{
		{Call: "c2", K: 1, Attempt: 1, Marker: "c2/t1-a1", Action: session.ActionSpawn, AgentType: "reviewer", Model: "m", ReasoningEffort: "high", Message: "crw-flow-op: c2/t1-a1\n..."},
		{Call: "c1", K: 2, Attempt: 1, Marker: "c1/t2-a1", Action: session.ActionSendInput, AgentID: "agent-1", Message: "crw-flow-op: c1/t2-a1\nfix it"},
		{Call: "c0", Attempt: 1, Action: session.ActionClose, AgentID: "agent-0"},
	}
	agents := []string{"agent-1"} // c1's subagent; c0 has ended, its subagent waits for its close
	v := session.Next("r1", session.StateRunning, "", steps, agents, 6, nil)
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
	assert.Contains(t, v.Hint, "wait_agent(targets: agent-0, agent-1, timeout_ms: 30000) with crw flow next r1 --wait 30s until the run ends.")

	full := session.Next("r1", session.StateRunning, "", steps[:1], agents, 2, nil)
	assert.Contains(t, full.Hint, "slots are full")

	idle := session.Next("r1", session.StateRunning, "", nil, agents, 6, nil)
	assert.Equal(t, session.StateRunning, idle.State)
	assert.Empty(t, idle.Steps)
	ended := session.Next("r1", session.StateEnded, "completed", nil, agents, 6, nil)
	assert.Contains(t, ended.Hint, "The run ended (completed)")
	assert.NotContains(t, ended.Hint, "wait_agent")
	paused := session.Next("r1", session.StatePaused, "", nil, agents, 6, nil)
	assert.NotContains(t, paused.Hint, "wait_agent", "next --wait returns at once on a paused run: no loop to alternate")
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
	assert.Equal(t, "executor", roles.AgentType("executor-t1"))
	assert.Equal(t, "reviewer", roles.AgentType("critic"))
	assert.Equal(t, "architect", roles.AgentType("architect"))
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
	_, ok, err = bus.ReplyTo(r1.ID)
	require.NoError(t, err)
	assert.False(t, ok, "a reply read is taken out of replies/")
}

// TestBusFollowsNoLinkItDidNotMake: a subagent's workspace is inside the run's folder, so a
// link planted among the bus's folders or files must not send a write, a read or a remove
// outside: each bus folder that is a link is refused as damaged, a link file is never followed.
func TestBusFollowsNoLinkItDidNotMake(t *testing.T) {
	outside := t.TempDir()
	precious := filepath.Join(outside, "precious.json")
	write := func() { require.NoError(t, os.WriteFile(precious, []byte(`{"keep": true}`), 0o600)) }
	kept := func(what string) {
		t.Helper()
		data, err := os.ReadFile(precious)
		require.NoError(t, err, what)
		assert.Equal(t, `{"keep": true}`, string(data), what)
	}
	newBus := func() session.Bus {
		bus := session.Bus{Dir: t.TempDir()}
		require.NoError(t, os.MkdirAll(filepath.Join(bus.Dir, "steps", ".live"), 0o700))
		return bus
	}
	step := func(bus session.Bus, call string) session.StepFile {
		return session.StepFile{Call: call, K: 1, Attempt: 1, Marker: call + "/t1-a1", Action: session.ActionSpawn, Packet: bus.PacketPath(call, 1, 1)}
	}

	t.Run("a call's folder", func(t *testing.T) {
		write()
		bus := newBus()
		require.NoError(t, os.Symlink(outside, filepath.Join(bus.Dir, "steps", "c1")))
		require.NoError(t, os.WriteFile(filepath.Join(bus.Dir, "steps", ".live", "c1"), nil, 0o600))
		assert.ErrorIs(t, bus.Publish(step(bus, "c1"), "packet"), session.ErrDamaged)
		assert.NoFileExists(t, filepath.Join(outside, "t1-a1.json"))
		_, _, _, err := bus.Read()
		assert.ErrorIs(t, err, session.ErrDamaged)
		bus.RetractClose("c1", 1, "precious")
		require.NoError(t, os.Rename(precious, filepath.Join(outside, "close-a1-x.json")))
		bus.RetractClose("c1", 1, "x")
		assert.FileExists(t, filepath.Join(outside, "close-a1-x.json"), "no remove through the link")
		require.NoError(t, os.Rename(filepath.Join(outside, "close-a1-x.json"), precious))
		kept("a linked call folder")
	})
	t.Run("a live index entry", func(t *testing.T) {
		write()
		bus := newBus()
		require.NoError(t, os.Symlink(precious, filepath.Join(bus.Dir, "steps", ".live", "c1")))
		assert.Error(t, bus.MarkBound("c1", 1, "agent-1"), "a linked index entry is not followed")
		kept("a linked index entry is neither truncated nor written")
	})
	t.Run("the inbox and replies", func(t *testing.T) {
		write()
		bus := newBus()
		require.NoError(t, os.Symlink(outside, filepath.Join(bus.Dir, "inbox")))
		_, err := bus.Inbox()
		assert.ErrorIs(t, err, session.ErrDamaged)
		_, err = bus.Dispatch(session.Report{Run: "r", Call: "c1", Agent: "a1", K: 1, Attempt: 1})
		assert.ErrorIs(t, err, session.ErrDamaged)
		kept("the run does not remove what a linked inbox holds")
		entries, _ := os.ReadDir(outside)
		assert.Len(t, entries, 1, "no report was written through the link")

		require.NoError(t, os.Symlink(outside, filepath.Join(bus.Dir, "replies")))
		assert.ErrorIs(t, bus.Answer(session.Report{ID: "1-ab", Run: "r"}, session.Reply{Reply: session.ReplyBound}), session.ErrDamaged)
		assert.NoFileExists(t, filepath.Join(outside, "1-ab.json"))
	})
}

// TestBusPassesOverStepsOutOfForm: a step file whose names could lead out of its folder (an
// agent id with a slash, a call other than its folder's) is no step; a report's or a close's
// names are checked before any path is made of them.
func TestBusPassesOverStepsOutOfForm(t *testing.T) {
	bus := session.Bus{Dir: t.TempDir()}
	require.NoError(t, bus.CloseAgent("c1", 1, "agent-1"))
	dir := filepath.Join(bus.Dir, "steps", "c1")
	victim := filepath.Join(t.TempDir(), "important.json")
	require.NoError(t, os.WriteFile(victim, []byte("{}"), 0o600))
	rel, err := filepath.Rel(dir, strings.TrimSuffix(victim, ".json"))
	require.NoError(t, err)
	for name, body := range map[string]string{
		"evil.json":    `{"call": "c1", "attempt": 1, "action": "close", "agent_id": "x/` + rel + `"}`,
		"other.json":   `{"call": "c2", "attempt": 1, "action": "close", "agent_id": "agent-2"}`,
		"marker.json":  `{"call": "c1", "k": 1, "attempt": 1, "marker": "c9/t1-a1", "action": "spawn"}`,
		"unknown.json": `{"call": "c1", "k": 1, "attempt": 1, "marker": "c1/t1-a1", "action": "delete"}`,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600))
	}
	steps, _, _, err := bus.Read()
	require.NoError(t, err)
	assert.Equal(t, []session.StepFile{{Call: "c1", Attempt: 1, Action: session.ActionClose, AgentID: "agent-1"}}, steps)
	bus.RetractClose("c1", 1, "x/"+rel)
	assert.FileExists(t, victim)
	assert.False(t, bus.Published("../../x", 1, 1))
}

// TestBusRefusesAFolderOverItsBound: a call's folder holding more entries than crw writes is
// damaged, not read whole.
func TestBusRefusesAFolderOverItsBound(t *testing.T) {
	bus := session.Bus{Dir: t.TempDir()}
	require.NoError(t, bus.CloseAgent("c1", 1, "agent-1"))
	for i := range 4097 {
		require.NoError(t, os.WriteFile(filepath.Join(bus.Dir, "steps", "c1", fmt.Sprintf("packet-%d.md", i)), nil, 0o600))
	}
	_, _, _, err := bus.Read()
	assert.ErrorIs(t, err, session.ErrDamaged)
}

// TestBusMarksTheBoundSubagents: a bound attempt's subagent is on the bus while its call is
// open, for crw flow next to count without the journal.
func TestBusMarksTheBoundSubagents(t *testing.T) {
	bus := session.Bus{Dir: t.TempDir()}
	require.NoError(t, bus.MarkBound("c1", 1, "agent-a"))
	require.NoError(t, bus.MarkBound("c1", 2, "agent-b"))
	require.NoError(t, bus.MarkBound("c2", 1, "agent-c"))
	assert.Error(t, bus.MarkBound("c3", 1, "../x"))
	_, _, agents, err := bus.Read()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"agent-a", "agent-b", "agent-c"}, agents)
	bus.Unbind("c1", 1)
	_, _, agents, _ = bus.Read()
	assert.ElementsMatch(t, []string{"agent-b", "agent-c"}, agents)
	bus.Unbind("c1", 0)
	_, _, agents, _ = bus.Read()
	assert.Equal(t, []string{"agent-c"}, agents)
}

// BenchmarkNextAt1000Calls is what crw flow next does for a run of 1,000 session calls: it
// reads the bus (1,000 call folders, each with its packet; 3 steps waiting, 2 subagents bound)
// and builds its answer. It reads no journal row.
func BenchmarkNextAt1000Calls(b *testing.B) {
	bus := session.Bus{Dir: b.TempDir()}
	for i := 1; i <= 1000; i++ {
		call := fmt.Sprint("c", i)
		st := session.StepFile{Call: call, K: 1, Attempt: 1, Marker: call + "/t1-a1", Action: session.ActionSpawn, AgentType: "reviewer",
			Packet: bus.PacketPath(call, 1, 1)}
		require.NoError(b, bus.Publish(st, "packet of "+call))
		switch {
		case i <= 997:
			require.NoError(b, bus.Retract(call, 1, 1))
		case i <= 999:
			require.NoError(b, bus.Retract(call, 1, 1))
			require.NoError(b, bus.MarkBound(call, 1, "agent-"+call))
		}
	}
	require.NoError(b, bus.CloseAgent("c1", 1, "agent-c1"))
	for b.Loop() {
		steps, _, agents, err := bus.Read()
		require.NoError(b, err)
		v := session.Next("r1", session.StateRunning, "", steps, agents, 6, nil)
		if len(v.Steps) != 2 || v.Slots.Open != 3 {
			b.Fatalf("steps %d, open slots %d", len(v.Steps), v.Slots.Open)
		}
	}
}

// TestBusLiveIndexFollowsTheCallsInFlight: a call is in the live index while it has a step, a
// close step or a bound mark, and out of it once it has none; Reindex makes the index again
// from the calls' folders.
func TestBusLiveIndexFollowsTheCallsInFlight(t *testing.T) {
	bus := session.Bus{Dir: t.TempDir()}
	live := func() []string {
		entries, err := os.ReadDir(filepath.Join(bus.Dir, "steps", ".live"))
		require.NoError(t, err)
		var calls []string
		for _, e := range entries {
			calls = append(calls, e.Name())
		}
		return calls
	}
	st := session.StepFile{Call: "c1", K: 1, Attempt: 1, Action: session.ActionSpawn, Packet: bus.PacketPath("c1", 1, 1)}
	require.NoError(t, bus.Publish(st, "packet"))
	require.NoError(t, bus.MarkBound("c1", 1, "agent-1"))
	require.NoError(t, bus.Retract("c1", 1, 1))
	assert.Equal(t, []string{"c1"}, live(), "bound: still in flight")
	bus.Unbind("c1", 0)
	assert.Empty(t, live(), "nothing of c1 is left on the bus")
	assert.FileExists(t, bus.PacketPath("c1", 1, 1), "the packet stays, for the record")
	require.NoError(t, bus.CloseAgent("c1", 1, "agent-1"))
	assert.Equal(t, []string{"c1"}, live())
	steps, _, _, err := bus.Read()
	require.NoError(t, err)
	require.Len(t, steps, 1)
	assert.Equal(t, session.ActionClose, steps[0].Action)

	require.NoError(t, os.RemoveAll(filepath.Join(bus.Dir, "steps", ".live")))
	require.NoError(t, bus.Reindex())
	assert.Equal(t, []string{"c1"}, live(), "made again from the folders")
	bus.RetractClose("c1", 1, "agent-1")
	assert.Empty(t, live())
	steps, _, _, err = bus.Read()
	require.NoError(t, err)
	assert.Empty(t, steps)
}

func TestSpawnFormatsNameTheDecidedPartsOfEachRole(t *testing.T) {
	got := session.SpawnFormats([]string{"executor-t1", "critic", "explorer"}, map[string]journal.Pair{
		"executor-t1": {Model: "gpt-x", Effort: "high"}, "critic": {Model: "gpt-y"}})
	assert.Equal(t, []session.SpawnFormat{
		{Role: "executor-t1", AgentType: "executor", Model: "gpt-x", ReasoningEffort: "high",
			Call: `spawn_agent(agent_type="executor", message, model="gpt-x", reasoning_effort="high", fork_context=false)`},
		{Role: "critic", AgentType: "reviewer", Model: "gpt-y", Call: `spawn_agent(agent_type="reviewer", message, model="gpt-y", fork_context=false)`},
		{Role: "explorer", AgentType: "explorer", Call: `spawn_agent(agent_type="explorer", message, fork_context=false)`},
	}, got)
	v := session.Next("r1", session.StateRunning, "", nil, nil, 6, got)
	assert.Equal(t, got, v.SpawnFormats)
	assert.Equal(t, []session.SpawnFormat{}, session.Next("r1", session.StateRunning, "", nil, nil, 6, nil).SpawnFormats)
}

// TestNextNamesTheDecisionsARunWaitsFor: a run that waits for a decision says which, and how
// to answer it, before anything else; it asks for no wait loop.
func TestNextNamesTheDecisionsARunWaitsFor(t *testing.T) {
	v := session.Next("r1", session.StateWaitingDecision, "", nil, nil, 6, nil).
		WithDecisions([]journal.PendingDecision{{ID: "keep", Question: "Keep the change?"}})
	assert.Equal(t, "waiting_decision", v.State)
	assert.Equal(t, []journal.PendingDecision{{ID: "keep", Question: "Keep the change?"}}, v.Decisions)
	assert.Equal(t, "The run waits for the decision keep (Keep the change?): answer it with crw flow answer r1 keep --value JSON.", v.Hint)
	running := session.Next("r1", session.StateRunning, "", nil, nil, 6, nil)
	assert.Equal(t, running, running.WithDecisions(nil))
}

// TestNextSaysWhatPausedTheRun: a paused run's hint says what paused it and how it goes on, as
// its status says (its token budget: a resume with a larger one); a run that is not paused
// keeps its hint.
func TestNextSaysWhatPausedTheRun(t *testing.T) {
	why, how := "its token budget of 10", "crw flow resume r1 --budget-tokens N with N above the 12 tokens it has spent (0: no budget)"
	v := session.Next("r1", session.StatePaused, "", nil, nil, 6, nil).WithPause(why, how)
	assert.Equal(t, "The run is paused by its token budget of 10: crw flow resume r1 --budget-tokens N with N above the 12 tokens it has spent (0: no budget).", v.Hint)
	running := session.Next("r1", session.StateRunning, "", nil, nil, 6, nil)
	assert.Equal(t, running, running.WithPause(why, how))
}

// TestPacketCarriesTheRunsToolEnvironment: seed 003, the subagent's shell is the owner's and
// spawn_agent takes no environment, so the packet carries the run's recorded environment: a
// fact per entry, TMPDIR first, and the prefix every command takes.
func TestPacketCarriesTheRunsToolEnvironment(t *testing.T) {
	p := session.Packet(session.PacketInput{Marker: "c1/t1-a1", Role: "executor", Workspace: "/w", Task: "build",
		RunJSON: "/s/flow/R/run.json", Env: map[string]string{"GOTOOLCHAIN": "local", "TMPDIR": "/t", "PATH": "/opt/go/bin:$PATH"}})
	assert.Contains(t, p, "## Tools\n\n- The run's temporary directory is /t (recorded in /s/flow/R/run.json).\n"+
		"- The run's tools are in /opt/go/bin, before the shell's PATH (recorded in /s/flow/R/run.json).\n"+
		"- GOTOOLCHAIN is local (recorded in /s/flow/R/run.json).\n\n"+
		"Put this prefix in front of every command you run:\n\n    TMPDIR=/t PATH=/opt/go/bin:\"$PATH\" GOTOOLCHAIN=local\n")
}
