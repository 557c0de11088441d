package bound_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend/bound"
	"github.com/crw-dev/crw/journal"
)

const thread = "019b0000-0000-7000-8000-00000000abcd"

func line(run string) bound.Line {
	return bound.Line{Kind: bound.KindOrchestrator, RunID: run, PolicyDigest: "sha256:p", HelperPairs: map[string]journal.Pair{
		"architect": {Model: "m-arch", Effort: "high"}, "executor": {Model: "m-exec"}, "executor-t1": {}, "reviewer": {Model: "m-rev", Effort: "low"}, "explorer": {}}}
}

func lines(t *testing.T, s bound.Store) []bound.Line {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.Dir, thread+".jsonl"))
	require.NoError(t, err)
	var out []bound.Line
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var b bound.Line
		require.NoError(t, json.Unmarshal([]byte(l), &b), l)
		out = append(out, b)
	}
	return out
}

func TestBindCloseAndTheLineInForce(t *testing.T) {
	s := bound.New(t.TempDir())
	none := func(string) bool { return false }
	got, err := s.Last(thread)
	require.NoError(t, err)
	assert.Nil(t, got)

	out, err := s.Bind(thread, line("r1"), none)
	require.NoError(t, err)
	assert.True(t, out.Bound)
	fi, err := os.Stat(s.Dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	out, err = s.Bind(thread, line("r1"), none)
	require.NoError(t, err)
	assert.True(t, out.Bound)
	assert.Len(t, lines(t, s), 1, "a line in force is not written again")

	// Another run while r1 is live: a warning, nothing written.
	out, err = s.Bind(thread, line("r2"), func(run string) bool { return run == "r1" })
	require.NoError(t, err)
	assert.False(t, out.Bound)
	assert.Contains(t, out.Warning, "serves live run r1")
	assert.Len(t, lines(t, s), 1)

	// r1 no longer live: its line is closed, then r2's written.
	out, err = s.Bind(thread, line("r2"), none)
	require.NoError(t, err)
	assert.True(t, out.Bound)
	all := lines(t, s)
	require.Len(t, all, 3)
	assert.Equal(t, []string{bound.KindOrchestrator, bound.KindClosed, bound.KindOrchestrator}, []string{all[0].Kind, all[1].Kind, all[2].Kind})
	assert.Equal(t, "r1", all[1].RunID)

	require.NoError(t, s.Close(thread, "r1"), "another run's close changes nothing")
	assert.Len(t, lines(t, s), 3)
	require.NoError(t, s.Close(thread, "r2"))
	last, err := s.Last(thread)
	require.NoError(t, err)
	assert.Equal(t, bound.KindClosed, last.Kind)
	assert.False(t, last.Open())
}

// TestTwoBindsAtOnceOneBinds: starts of two runs on one thread at the same moment, each seeing
// the other live once it has bound: exactly one binds.
func TestTwoBindsAtOnceOneBinds(t *testing.T) {
	for range 20 {
		s := bound.New(t.TempDir())
		var wg sync.WaitGroup
		results := make([]bound.Outcome, 2)
		for i, run := range []string{"ra", "rb"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := s.Bind(thread, line(run), func(string) bool { return true })
				assert.NoError(t, err)
				results[i] = out
			}()
		}
		wg.Wait()
		assert.NotEqual(t, results[0].Bound, results[1].Bound, "exactly one binds: %+v", results)
		assert.Len(t, lines(t, s), 1)
	}
}

func TestBindingsThatCannotBeTrusted(t *testing.T) {
	state := t.TempDir()
	s := bound.New(state)
	require.NoError(t, os.Mkdir(s.Dir, 0o755))
	_, err := s.Last(thread)
	assert.ErrorIs(t, err, bound.ErrUntrusted, "a folder open to others")
	_, err = s.Bind(thread, line("r1"), func(string) bool { return false })
	assert.ErrorIs(t, err, bound.ErrUntrusted)

	require.NoError(t, os.Remove(s.Dir))
	elsewhere := t.TempDir()
	require.NoError(t, os.Symlink(elsewhere, s.Dir))
	_, err = s.Bind(thread, line("r1"), func(string) bool { return false })
	assert.ErrorIs(t, err, bound.ErrUntrusted, "a linked folder")
	entries, _ := os.ReadDir(elsewhere)
	assert.Empty(t, entries)

	require.NoError(t, os.Remove(s.Dir))
	require.NoError(t, os.Mkdir(s.Dir, 0o700))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "x"), filepath.Join(s.Dir, thread+".jsonl")))
	_, err = s.Bind(thread, line("r1"), func(string) bool { return false })
	assert.Error(t, err, "a linked binding file")
	assert.NoFileExists(t, filepath.Join(elsewhere, "x"))

	out, err := s.Bind("../x", line("r1"), func(string) bool { return false })
	require.NoError(t, err)
	assert.False(t, out.Bound)
	assert.Contains(t, out.Warning, "not a thread id")

	bad := line("r1")
	delete(bad.HelperPairs, "reviewer")
	_, err = bound.New(t.TempDir()).Bind(thread, bad, func(string) bool { return false })
	assert.ErrorContains(t, err, "no pair for reviewer")
}

func event(input string, agentID string) bound.Event {
	return bound.Event{SessionID: thread, TurnID: "turn-1", ToolName: "spawn_agent", ToolUseID: "call_1", AgentID: agentID, ToolInput: json.RawMessage(input)}
}

func TestDecideSpawns(t *testing.T) {
	l := line("r1")
	for _, c := range []struct {
		name, input, agent string
		decision, reason   string
		role               string
		pair               journal.Pair
		warnings           []string
		output             string
	}{
		{name: "the header role's pair overwrites what the model asked", input: `{"agent_type":"reviewer","message":"crw-flow-op: c1/t1-a1\nCRW-ROLE: reviewer\n\nDo it.","model":"other","reasoning_effort":"xhigh"}`,
			decision: bound.Allow, role: "reviewer", pair: journal.Pair{Model: "m-rev", Effort: "low"},
			output: `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"agent_type":"reviewer","message":"crw-flow-op: c1/t1-a1\nCRW-ROLE: reviewer\n\nDo it.","model":"m-rev","reasoning_effort":"low"}}}`},
		{name: "no agent type and no header: explorer, undecided", input: `{"message":"look around","model":"other"}`,
			decision: bound.Pass, role: "explorer", pair: journal.Pair{Model: "other"}, warnings: []string{"unrecorded_spawn", "role_undecided"}},
		{name: "worker is the executor; its undecided effort keeps the spawn's", input: `{"agent_type":"worker","message":"build","reasoning_effort":"medium"}`,
			decision: bound.Allow, role: "executor", pair: journal.Pair{Model: "m-exec", Effort: "medium"}, warnings: []string{"unrecorded_spawn", "unrecorded_author"},
			output: `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"agent_type":"worker","message":"build","model":"m-exec","reasoning_effort":"medium"}}}`},
		{name: "a header role that does not pair with the agent type", input: `{"agent_type":"explorer","message":"crw-flow-op: c2/t1-a1\nCRW-ROLE: architect\n\nplan"}`,
			decision: bound.Allow, role: "architect", pair: journal.Pair{Model: "m-arch", Effort: "high"}, warnings: []string{"role_agent_type_mismatch"},
			output: `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"agent_type":"explorer","message":"crw-flow-op: c2/t1-a1\nCRW-ROLE: architect\n\nplan","model":"m-arch","reasoning_effort":"high"}}}`},
		{name: "a full-history fork", input: `{"agent_type":"reviewer","message":"x","fork_context":true}`,
			decision: bound.Deny, reason: "full_history_fork_refused", role: "reviewer", warnings: []string{"unrecorded_spawn"},
			output: `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"crw: full_history_fork_refused: a fork of the owner's whole history keeps the owner's pair; spawn with fork_context=false"}}`},
		{name: "a spawn by a subagent", input: `{"agent_type":"explorer","message":"x"}`, agent: "019b-sub",
			decision: bound.Deny, reason: "leaf_spawn_refused", role: "explorer", warnings: []string{"unrecorded_spawn"},
			output: `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"crw: leaf_spawn_refused: a subagent of a session run is a leaf and never spawns agents"}}`},
		{name: "a header role that is not crw's", input: `{"message":"CRW-ROLE: boss\n\nx"}`,
			decision: bound.Pass, role: "explorer", warnings: []string{"unrecorded_spawn", "role_undecided"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := bound.Decide(event(c.input, c.agent), &l)
			assert.Equal(t, c.decision, d.Decision)
			assert.Equal(t, c.reason, d.Reason)
			assert.Equal(t, c.role, d.Role)
			assert.Equal(t, c.pair, d.Pair)
			assert.Equal(t, c.warnings, d.Warnings)
			assert.Equal(t, "r1", d.RunID)
			if c.output == "" {
				assert.Nil(t, d.Output())
			} else {
				assert.JSONEq(t, c.output, string(d.Output()))
			}
		})
	}
	// Without a binding every spawn is the owner's own: nothing refused, nothing rewritten.
	for _, input := range []string{`{"agent_type":"reviewer","message":"x","fork_context":true}`, `{"message":"CRW-ROLE: reviewer\n\nx"}`} {
		d := bound.Decide(event(input, "019b-sub"), nil)
		assert.Equal(t, bound.Pass, d.Decision)
		assert.Nil(t, d.Output())
		closed := bound.Line{Kind: bound.KindClosed, RunID: "r1"}
		assert.Nil(t, bound.Decide(event(input, ""), &closed).Output())
	}
}

func TestTheLedgerRecordsEachDecision(t *testing.T) {
	s := bound.New(t.TempDir())
	l := line("r1")
	require.NoError(t, s.Record(bound.Decide(event(`{"agent_type":"reviewer","message":"crw-flow-op: c1/t1-a1\nCRW-ROLE: reviewer\n\nx"}`, ""), &l)))
	require.NoError(t, s.Record(bound.Decide(event(`{"message":"x","fork_context":true}`, ""), &l)))
	data, err := os.ReadFile(filepath.Join(s.Dir, "decisions", thread+".jsonl"))
	require.NoError(t, err)
	rows := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, rows, 2)
	var first, second map[string]any
	require.NoError(t, json.Unmarshal([]byte(rows[0]), &first))
	require.NoError(t, json.Unmarshal([]byte(rows[1]), &second))
	assert.Equal(t, "allow", first["decision"])
	assert.Equal(t, "reviewer", first["role"])
	assert.Equal(t, "c1/t1-a1", first["op"])
	assert.Equal(t, "r1", first["run_id"])
	assert.Equal(t, map[string]any{"model": "m-rev", "effort": "low"}, first["pair"])
	assert.Equal(t, "deny", second["decision"])
	assert.Equal(t, "full_history_fork_refused", second["reason"])
	assert.Equal(t, []any{"unrecorded_spawn"}, second["warnings"])
}

// TestALastLineTooLongIsSaid: a binding file whose last line is longer than what is read of it
// is an error, whether or not a newline ends it: never a silent "no binding".
func TestALastLineTooLongIsSaid(t *testing.T) {
	for _, end := range []string{"", "\n"} {
		s := bound.New(t.TempDir())
		_, err := s.Bind(thread, line("r1"), func(string) bool { return false })
		require.NoError(t, err)
		f, err := os.OpenFile(filepath.Join(s.Dir, thread+".jsonl"), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(strings.Repeat("x", 100_000) + end)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		_, err = s.Last(thread)
		assert.ErrorContains(t, err, "its last line is longer than 65536 bytes", "ending %q", end)
	}
}

func TestDecidePassesWhatItCannotRewrite(t *testing.T) {
	l := line("r1")
	for _, input := range []string{`"{\"message\":\"hello\"}"`, `[1,2]`, `null`, `7`} {
		d := bound.Decide(event(input, ""), &l)
		assert.Equal(t, bound.Pass, d.Decision, input)
		assert.Nil(t, d.Output(), input)
		assert.Contains(t, d.Warnings, "tool_input_not_an_object")
	}
	d := bound.Decide(event(`{"agent_type":"worker","message":"crw-flow-op: c1/t1-a1\nCRW-ROLE: executor\n\nx"}`, ""), &l)
	assert.NotContains(t, d.Warnings, "role_agent_type_mismatch", "worker is the executor")
}
