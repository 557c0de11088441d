package bus_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/roles"
)

func TestMarkers(t *testing.T) {
	call, k, n, ok := bus.ParseMarker("c12/t2-a3")
	assert.True(t, ok)
	assert.Equal(t, []any{"c12", 2, 3}, []any{call, k, n})
	for _, bad := range []string{"", "c1", "c1/t0-a1", "c1/t1-a0", "../x/t1-a1", "c1/t1-a1x", "c1/t01-a1", "c 1/t1-a1"} {
		_, _, _, ok := bus.ParseMarker(bad)
		assert.False(t, ok, bad)
	}
	assert.Equal(t, "c1/t1-a1", bus.MarkerOf("crw-flow-op: c1/t1-a1\nCRW-ROLE: x"))
	assert.Equal(t, "", bus.MarkerOf("hello\ncrw-flow-op: c1/t1-a1"))
	assert.Equal(t, "", bus.MarkerOf("crw-flow-op: ../../etc"))
	assert.Equal(t, "executor", roles.AgentType("executor-t1"))
	assert.Equal(t, "reviewer", roles.AgentType("critic"))
	assert.Equal(t, "architect", roles.AgentType("architect"))
}

func TestSpawnMessageIsTheSeeds(t *testing.T) {
	got := bus.SpawnMessage("c1/t1-a1", "reviewer", "/w/P", "/w/steps/c1/packet-t1-a1.md")
	want := "crw-flow-op: c1/t1-a1\nCRW-ROLE: reviewer\n\n" +
		"Your shell starts in a directory that is NOT your workspace. Your workspace is /w/P: run every command with workdir /w/P and edit only by absolute paths under /w/P.\n" +
		"Read the task packet /w/steps/c1/packet-t1-a1.md in full and follow it exactly. You are a leaf subagent: never spawn agents.\n" +
		"Your final message is exactly the JSON object the packet names, and nothing else.\n"
	assert.Equal(t, want, got)
}

func TestBusReportsAndReplies(t *testing.T) {
	sb := bus.Bus{Dir: t.TempDir()}
	for _, bad := range []bus.Report{{Call: "../c1", Agent: "a", K: 1, Attempt: 1}, {Call: "c1", Agent: "a/b", K: 1, Attempt: 1}, {Call: "c1", Agent: "a", K: 0, Attempt: 1}} {
		_, err := sb.Dispatch(bad)
		assert.Error(t, err, "%+v", bad)
	}
	r1, err := sb.Dispatch(bus.Report{Run: "r", Call: "c1", Agent: "a1", K: 1, Attempt: 1})
	require.NoError(t, err)
	r2, err := sb.Dispatch(bus.Report{Run: "r", Call: "c2", Agent: "a2", K: 1, Attempt: 1})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(sb.Dir, "inbox", "junk.json"), []byte("{"), 0o600))
	got, err := sb.Inbox()
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, []string{r1.ID, r2.ID}, []string{got[0].ID, got[1].ID}, "oldest first")
	assert.NoFileExists(t, filepath.Join(sb.Dir, "inbox", "junk.json"), "what is not a report is removed")
	_, ok, err := sb.ReplyTo(r1.ID)
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, sb.Answer(r1, bus.Reply{Reply: bus.ReplyBound, Marker: "c1/t1-a1", Agent: "a1"}))
	reply, ok, err := sb.ReplyTo(r1.ID)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, bus.ReplyBound, reply.Reply)
	got, _ = sb.Inbox()
	assert.Len(t, got, 1, "an answered report leaves the inbox")
	_, ok, err = sb.ReplyTo(r1.ID)
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
	newBus := func() bus.Bus {
		sb := bus.Bus{Dir: t.TempDir()}
		require.NoError(t, os.MkdirAll(filepath.Join(sb.Dir, "steps", ".live"), 0o700))
		return sb
	}
	step := func(sb bus.Bus, call string) bus.StepFile {
		return bus.StepFile{Call: call, K: 1, Attempt: 1, Marker: call + "/t1-a1", Action: bus.ActionSpawn, Packet: sb.PacketPath(call, 1, 1)}
	}

	t.Run("a call's folder", func(t *testing.T) {
		write()
		sb := newBus()
		require.NoError(t, os.Symlink(outside, filepath.Join(sb.Dir, "steps", "c1")))
		require.NoError(t, os.WriteFile(filepath.Join(sb.Dir, "steps", ".live", "c1"), nil, 0o600))
		assert.ErrorIs(t, sb.Publish(step(sb, "c1"), "packet"), bus.ErrDamaged)
		assert.NoFileExists(t, filepath.Join(outside, "t1-a1.json"))
		_, _, _, err := sb.Read()
		assert.ErrorIs(t, err, bus.ErrDamaged)
		sb.RetractClose("c1", 1, "precious")
		require.NoError(t, os.Rename(precious, filepath.Join(outside, "close-a1-x.json")))
		sb.RetractClose("c1", 1, "x")
		assert.FileExists(t, filepath.Join(outside, "close-a1-x.json"), "no remove through the link")
		require.NoError(t, os.Rename(filepath.Join(outside, "close-a1-x.json"), precious))
		kept("a linked call folder")
	})
	t.Run("a live index entry", func(t *testing.T) {
		write()
		sb := newBus()
		require.NoError(t, os.Symlink(precious, filepath.Join(sb.Dir, "steps", ".live", "c1")))
		assert.Error(t, sb.MarkBound("c1", 1, "agent-1"), "a linked index entry is not followed")
		kept("a linked index entry is neither truncated nor written")
	})
	t.Run("the inbox and replies", func(t *testing.T) {
		write()
		sb := newBus()
		require.NoError(t, os.Symlink(outside, filepath.Join(sb.Dir, "inbox")))
		_, err := sb.Inbox()
		assert.ErrorIs(t, err, bus.ErrDamaged)
		_, err = sb.Dispatch(bus.Report{Run: "r", Call: "c1", Agent: "a1", K: 1, Attempt: 1})
		assert.ErrorIs(t, err, bus.ErrDamaged)
		kept("the run does not remove what a linked inbox holds")
		entries, _ := os.ReadDir(outside)
		assert.Len(t, entries, 1, "no report was written through the link")

		require.NoError(t, os.Symlink(outside, filepath.Join(sb.Dir, "replies")))
		assert.ErrorIs(t, sb.Answer(bus.Report{ID: "1-ab", Run: "r"}, bus.Reply{Reply: bus.ReplyBound}), bus.ErrDamaged)
		assert.NoFileExists(t, filepath.Join(outside, "1-ab.json"))
	})
}

// TestBusPassesOverStepsOutOfForm: a step file whose names could lead out of its folder (an
// agent id with a slash, a call other than its folder's) is no step; a report's or a close's
// names are checked before any path is made of them.
func TestBusPassesOverStepsOutOfForm(t *testing.T) {
	sb := bus.Bus{Dir: t.TempDir()}
	require.NoError(t, sb.CloseAgent("c1", 1, "agent-1"))
	dir := filepath.Join(sb.Dir, "steps", "c1")
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
	steps, _, _, err := sb.Read()
	require.NoError(t, err)
	assert.Equal(t, []bus.StepFile{{Call: "c1", Attempt: 1, Action: bus.ActionClose, AgentID: "agent-1"}}, steps)
	sb.RetractClose("c1", 1, "x/"+rel)
	assert.FileExists(t, victim)
	assert.False(t, sb.Published("../../x", 1, 1))
}

// TestBusRefusesAFolderOverItsBound: a call's folder holding more entries than crw writes is
// damaged, not read whole.
func TestBusRefusesAFolderOverItsBound(t *testing.T) {
	sb := bus.Bus{Dir: t.TempDir()}
	require.NoError(t, sb.CloseAgent("c1", 1, "agent-1"))
	for i := range 4097 {
		require.NoError(t, os.WriteFile(filepath.Join(sb.Dir, "steps", "c1", fmt.Sprintf("packet-%d.md", i)), nil, 0o600))
	}
	_, _, _, err := sb.Read()
	assert.ErrorIs(t, err, bus.ErrDamaged)
}

// TestBusMarksTheBoundSubagents: a bound attempt's subagent is on the bus while its call is
// open, for crw flow next to count without the journal.
func TestBusMarksTheBoundSubagents(t *testing.T) {
	sb := bus.Bus{Dir: t.TempDir()}
	require.NoError(t, sb.MarkBound("c1", 1, "agent-a"))
	require.NoError(t, sb.MarkBound("c1", 2, "agent-b"))
	require.NoError(t, sb.MarkBound("c2", 1, "agent-c"))
	assert.Error(t, sb.MarkBound("c3", 1, "../x"))
	_, _, agents, err := sb.Read()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"agent-a", "agent-b", "agent-c"}, agents)
	sb.Unbind("c1", 1)
	_, _, agents, _ = sb.Read()
	assert.ElementsMatch(t, []string{"agent-b", "agent-c"}, agents)
	sb.Unbind("c1", 0)
	_, _, agents, _ = sb.Read()
	assert.Equal(t, []string{"agent-c"}, agents)
}

// TestBusLiveIndexFollowsTheCallsInFlight: a call is in the live index while it has a step, a
// close step or a bound mark, and out of it once it has none; Reindex makes the index again
// from the calls' folders.
func TestBusLiveIndexFollowsTheCallsInFlight(t *testing.T) {
	sb := bus.Bus{Dir: t.TempDir()}
	live := func() []string {
		entries, err := os.ReadDir(filepath.Join(sb.Dir, "steps", ".live"))
		require.NoError(t, err)
		var calls []string
		for _, e := range entries {
			calls = append(calls, e.Name())
		}
		return calls
	}
	st := bus.StepFile{Call: "c1", K: 1, Attempt: 1, Action: bus.ActionSpawn, Packet: sb.PacketPath("c1", 1, 1)}
	require.NoError(t, sb.Publish(st, "packet"))
	require.NoError(t, sb.MarkBound("c1", 1, "agent-1"))
	require.NoError(t, sb.Retract("c1", 1, 1))
	assert.Equal(t, []string{"c1"}, live(), "bound: still in flight")
	sb.Unbind("c1", 0)
	assert.Empty(t, live(), "nothing of c1 is left on the bus")
	assert.FileExists(t, sb.PacketPath("c1", 1, 1), "the packet stays, for the record")
	require.NoError(t, sb.CloseAgent("c1", 1, "agent-1"))
	assert.Equal(t, []string{"c1"}, live())
	steps, _, _, err := sb.Read()
	require.NoError(t, err)
	require.Len(t, steps, 1)
	assert.Equal(t, bus.ActionClose, steps[0].Action)

	require.NoError(t, os.RemoveAll(filepath.Join(sb.Dir, "steps", ".live")))
	require.NoError(t, sb.Reindex())
	assert.Equal(t, []string{"c1"}, live(), "made again from the folders")
	sb.RetractClose("c1", 1, "agent-1")
	assert.Empty(t, live())
	steps, _, _, err = sb.Read()
	require.NoError(t, err)
	assert.Empty(t, steps)
}

// TestPacketCarriesTheRunsToolEnvironment: seed 003, the subagent's shell is the owner's and
// spawn_agent takes no environment, so the packet carries the run's recorded environment: a
// fact per entry, TMPDIR first, and the prefix every command takes.
func TestPacketCarriesTheRunsToolEnvironment(t *testing.T) {
	p := bus.Packet(bus.PacketInput{Marker: "c1/t1-a1", Role: "executor", Workspace: "/w", Task: "build",
		RunJSON: "/s/flow/R/run.json", Env: map[string]string{"GOTOOLCHAIN": "local", "TMPDIR": "/t", "PATH": "/opt/go/bin:$PATH"}})
	assert.Contains(t, p, "## Tools\n\n- The run's temporary directory is /t (recorded in /s/flow/R/run.json).\n"+
		"- The run's tools are in /opt/go/bin, before the shell's PATH (recorded in /s/flow/R/run.json).\n"+
		"- GOTOOLCHAIN is local (recorded in /s/flow/R/run.json).\n\n"+
		"Put this prefix in front of every command you run:\n\n    TMPDIR=/t PATH=/opt/go/bin:\"$PATH\" GOTOOLCHAIN=local\n")
}
