package replay_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/journal"
)

// Deliberate bugs, planted one at a time, that the tests of the replay path must catch (each
// passed every test that ran without Codex before this path was built as one component):
//   - resume matching ignores node, schema, requested pair or handle (only the prompt is
//     checked), or a row without a prompt matches anything: TestStrictMatchesEveryInput;
//   - live results are not held back behind recorded completions: a crashed run then resumes
//     to ["b","a","c"] where the uninterrupted run gives ["b","c","a"], and no divergence is
//     reported: TestLiveResultsWaitBehindRecordedCompletions here, and the in-process crash
//     tests of engine (TestCrashAfterEveryCommit) with the race's journal order;
//   - the console is not muted during replay: engine's TestReplayMutesTheConsole;
//   - shadow's lookahead of 16 becomes 1: TestAlignLooksAheadSixteen;
//   - the repair turn resends the original prompt instead of naming what was wrong: engine's
//     TestContractAnswerParsing, which reads the prompt each turn reached the fake host with;
//   - the fake's delay is counted from now rather than from when the turn was sent: fake's
//     TestReconciledDelayCountsFromTheSend;
//   - the recorded TMPDIR is not applied to the run's own process: the script test
//     durable_tmpdir_resume (hosttmp: the fake host logs the TMPDIR of the process that sent
//     each turn);
//   - a turn that may have been sent is sent again on resume: the crash tests, which count
//     sends per turn on the fake host (cmd/crw/killtest's TestCrashBetweenEveryCommit, engine's
//     TestCrashAfterEveryCommit);
//   - TestErrorKindsOnAppServer took its expected values from the production table: they are
//     written out;
//   - node_call and role_call counted by the fake backend in its own process, or by the
//     Replayer for the calls the journal lacks only (both start again at 1 on a resume):
//     engine's TestFanOutNumbersTheSameAfterACrash and TestNthCallCountsReplayedCalls here;
//     counted in the order calls finish: engine's TestFanOutAnswersByPromptAndNthCall.

// rows builds a journal: a started row, then the rows given, seqs in order.
func rows(rs ...journal.Row) []journal.Row {
	out := append([]journal.Row{{Type: journal.TypeStarted, Run: "20261201-000000-abcdef", Backend: "fake"}}, rs...)
	for i := range out {
		out[i].Seq = uint64(i + 1)
	}
	return out
}

func prepared(call string, index int, node, prompt string) journal.Row {
	r := journal.Row{Type: journal.TypePrepared, Call: call, Index: index, Role: "explorer", Node: node, Prompt: prompt}
	replay.WithDigests(&r)
	return r
}

func completed(call string) journal.Row {
	return journal.Row{Type: journal.TypeCompleted, Call: call, Output: []byte(`"` + call + `"`)}
}

func held(call, reason string) journal.Row {
	return journal.Row{Type: journal.TypeHeld, Call: call, Reason: reason}
}

// inputsOf is what a prepared row asks.
func inputsOf(r *journal.Row) *journal.Prepared {
	return &journal.Prepared{Role: r.Role, Node: r.Node, Prompt: r.Prompt, SchemaDigest: r.SchemaDigest, Handle: r.Handle,
		Site: r.Site, RequestedPair: r.RequestedPair, ConfiguredPair: r.ConfiguredPair}
}

// ask is the prepared row a script's call gives, before it has an id.
func ask(node, prompt string) *journal.Row {
	return &journal.Row{Type: journal.TypePrepared, Role: "explorer", Node: node, Prompt: prompt}
}

func history(t *testing.T, rs ...journal.Row) *replay.History {
	t.Helper()
	h, err := replay.Read(rows(rs...))
	require.NoError(t, err)
	return h
}

// delivered records deliveries in order.
type delivered []string

func (d *delivered) fn(name string) func() { return func() { *d = append(*d, name) } }

func TestRecordedResultsComeInRecordedOrder(t *testing.T) {
	t.Parallel()
	// Issued a, b, c; recorded completions c, a, b.
	h := history(t, prepared("c1", 1, "a", "a"), prepared("c2", 2, "b", "b"), prepared("c3", 3, "c", "c"),
		completed("c3"), completed("c1"), completed("c2"))
	r := replay.New(h, replay.Strict, nil)
	var got delivered
	for _, node := range []string{"a", "b", "c"} {
		m := r.Next(inputsOf(ask(node, node)))
		require.Equal(t, replay.Replay, m.Kind)
		require.True(t, m.Same)
		r.Recorded(m.Rec, got.fn(node))
	}
	assert.Equal(t, delivered{"c", "a", "b"}, got)
	assert.False(t, r.Replaying())
}

// TestLiveResultsWaitBehindRecordedCompletions: a live call's result that arrives while
// recorded completions are still due reaches the script after them, as the earlier process
// saw them first.
func TestLiveResultsWaitBehindRecordedCompletions(t *testing.T) {
	t.Parallel()
	// Issued a, b, c together: b and c completed, a was under way when the process died.
	h := history(t, prepared("c1", 1, "a", "a"), prepared("c2", 2, "b", "b"), prepared("c3", 3, "c", "c"),
		completed("c2"), completed("c3"))
	woken := 0
	r := replay.New(h, replay.Strict, func() { woken++ })
	var got delivered
	ma := r.Next(inputsOf(ask("a", "a")))
	require.Equal(t, replay.Continue, ma.Kind, "a goes on from its last row")
	// a's live result comes before the script has even issued b and c.
	r.Live(got.fn("a"))
	assert.Empty(t, got, "held back: b and c are due first")
	assert.Equal(t, 1, woken, "a script that may be waiting is woken")
	assert.True(t, r.Replaying())
	mb := r.Next(inputsOf(ask("b", "b")))
	r.Recorded(mb.Rec, got.fn("b"))
	assert.Equal(t, delivered{"b"}, got)
	mc := r.Next(inputsOf(ask("c", "c")))
	r.Recorded(mc.Rec, got.fn("c"))
	assert.Equal(t, delivered{"b", "c", "a"}, got)
	assert.False(t, r.Replaying())
	r.Live(got.fn("d"))
	assert.Equal(t, delivered{"b", "c", "a", "d"}, got, "past the record, live results go at once")
}

func TestIdleReleasesHeldResultsThenPassesOver(t *testing.T) {
	t.Parallel()
	h := history(t, prepared("c1", 1, "a", "a"), prepared("c2", 2, "b", "b"), completed("c1"), completed("c2"))
	r := replay.New(h, replay.Strict, nil)
	var got delivered
	r.Live(got.fn("live"))
	r.Idle()
	assert.Equal(t, delivered{"live"}, got, "what is held back goes first")

	// The script made b but not a: a's turn is passed over so b can come.
	mb := r.Next(inputsOf(ask("a", "other path")))
	require.NotNil(t, mb.Divergence)
	h2 := history(t, prepared("c1", 1, "a", "a"), prepared("c2", 2, "b", "b"), completed("c1"), completed("c2"))
	r2 := replay.New(h2, replay.Align, nil)
	var got2 delivered
	m := r2.Next(inputsOf(ask("b", "b")))
	require.Equal(t, 2, m.Rec.Prepared.Index)
	r2.Recorded(m.Rec, got2.fn("b"))
	assert.Empty(t, got2, "a is due first")
	r2.Idle()
	assert.Equal(t, delivered{"b"}, got2)
	assert.False(t, r2.Replaying())
}

func TestOnCaughtUpOnce(t *testing.T) {
	t.Parallel()
	h := history(t, prepared("c1", 1, "a", "a"), completed("c1"))
	r := replay.New(h, replay.Strict, nil)
	calls := 0
	r.OnCaughtUp(func() { calls++ })
	m := r.Next(inputsOf(ask("a", "a")))
	r.Recorded(m.Rec, func() {})
	r.Live(func() {})
	assert.Equal(t, 1, calls)
}

// TestStrictMatchesEveryInput: a resumed call must ask for everything the recorded call asked:
// role, node, prompt, schema, requested pair and resume handle, each compared; a row written
// without its prompt is compared by its digest.
func TestStrictMatchesEveryInput(t *testing.T) {
	t.Parallel()
	base := func() *journal.Row {
		return &journal.Row{Type: journal.TypePrepared, Role: "executor", Node: "build", Prompt: "do it",
			SchemaDigest: "sha256:s1", RequestedPair: &journal.Pair{Model: "m1", Effort: "low"}, Handle: "crwh1:20261201-000000-abcdef:c9"}
	}
	tests := []struct {
		field string
		edit  func(*journal.Row)
	}{
		{"role", func(r *journal.Row) { r.Role = "reviewer" }},
		{"node", func(r *journal.Row) { r.Node = "other" }},
		{"prompt", func(r *journal.Row) { r.Prompt = "do it well" }},
		{"schema", func(r *journal.Row) { r.SchemaDigest = "sha256:s2" }},
		{"model", func(r *journal.Row) { r.RequestedPair = &journal.Pair{Model: "m2", Effort: "low"} }},
		{"effort", func(r *journal.Row) { r.RequestedPair = &journal.Pair{Model: "m1", Effort: "high"} }},
		{"model", func(r *journal.Row) { r.RequestedPair = nil }},
		{"resume", func(r *journal.Row) { r.Handle = "" }},
	}
	for _, tt := range tests {
		rec := *base()
		rec.Call, rec.Index = "c1", 1
		replay.WithDigests(&rec)
		h := history(t, rec, completed("c1"))

		same := base()
		m := replay.New(h, replay.Strict, nil).Next(inputsOf(same))
		require.Nil(t, m.Divergence, "the same call matches")
		assert.Equal(t, replay.Replay, m.Kind)

		got := base()
		tt.edit(got)
		m = replay.New(h, replay.Strict, nil).Next(inputsOf(got))
		require.NotNil(t, m.Divergence, "a call whose %s differs is a divergence", tt.field)
		assert.Equal(t, tt.field, m.Divergence.Field)
		assert.Equal(t, rec.InputDigest, m.Divergence.WantHash)
		assert.NotEqual(t, m.Divergence.WantHash, m.Divergence.GotHash)
		assert.Equal(t, 1, m.Divergence.Index)
		assert.Equal(t, "c1", m.Divergence.Call)
	}

	// A hand-written row with digests but no prompt: compared by digest, never matched blindly.
	rec := *base()
	rec.Call, rec.Index = "c1", 1
	replay.WithDigests(&rec)
	rec.Prompt = ""
	h := history(t, rec, completed("c1"))
	assert.Nil(t, replay.New(h, replay.Strict, nil).Next(inputsOf(base())).Divergence, "the digest matches")
	other := base()
	other.Prompt = "something else"
	m := replay.New(h, replay.Strict, nil).Next(inputsOf(other))
	require.NotNil(t, m.Divergence, "a row without its prompt does not match anything")
	assert.Equal(t, "prompt", m.Divergence.Field, "its prompt's digest differs")
	assert.Equal(t, `"`+rec.PromptDigest+`"`, m.Divergence.Want)
}

// TestStrictAfterAPausedCallRunsAgain: the call a pause held runs again as a new attempt; the
// script may then leave the record without a divergence.
func TestStrictAfterAPausedCallRunsAgain(t *testing.T) {
	t.Parallel()
	h := history(t, prepared("c1", 1, "gate", "which way"), held("c1", "host_infra_rate"),
		prepared("c2", 2, "left", "go left"), completed("c2"))
	r := replay.New(h, replay.Strict, nil)
	m := r.Next(inputsOf(ask("gate", "which way")))
	assert.Equal(t, replay.Rerun, m.Kind)
	assert.Equal(t, "c1", m.Rec.Prepared.Call)
	assert.False(t, r.Replaying(), "the record no longer holds anything back")
	m = r.Next(inputsOf(ask("right", "go right")))
	assert.Nil(t, m.Divergence, "another path is no divergence once the record is left")
	assert.Equal(t, replay.Fresh, m.Kind)
	assert.False(t, r.Made(h.Call("c2")))
}

func TestStrictGoesOnWithAnOpenCall(t *testing.T) {
	t.Parallel()
	h := history(t, prepared("c1", 1, "a", "a"), journal.Row{Type: journal.TypeThreadStarted, Call: "c1", ThreadID: "t"})
	r := replay.New(h, replay.Strict, nil)
	m := r.Next(inputsOf(ask("a", "a")))
	assert.Equal(t, replay.Continue, m.Kind)
	assert.True(t, r.Made(m.Rec))
	assert.Equal(t, replay.Fresh, r.Next(inputsOf(ask("b", "b"))).Kind, "past the record")
}

// TestStrictLeavesTheRecordAtARerunStillUnderWay: a pause held c1 and c2; a resume ran c1
// again (its second prepared row) and its process died while it was under way. The next
// resume goes on with c1 and is off the record from there, as the resume that ran it again
// was: nothing waits for c2, so a script that then waits for a verdict is seen to wait.
func TestStrictLeavesTheRecordAtARerunStillUnderWay(t *testing.T) {
	t.Parallel()
	h := history(t, prepared("c1", 1, "a", "a"), held("c1", "host_infra_rate"),
		prepared("c2", 2, "b", "b"), held("c2", "engine_paused"),
		journal.Row{Type: journal.TypeStarted, Run: "20261201-000000-abcdef", Backend: "fake"},
		prepared("c1", 1, "a", "a"))
	r := replay.New(h, replay.Strict, nil)
	m := r.Next(inputsOf(ask("a", "a")))
	assert.Equal(t, replay.Continue, m.Kind)
	assert.False(t, r.Replaying(), "the held c2 is no longer owed to the record")
	m = r.Next(inputsOf(ask("c", "another path")))
	assert.Nil(t, m.Divergence)
}

// TestAlignLooksAheadSixteen: a shadow of a script that dropped calls finds the calls it still
// makes up to 16 positions further on; further than that is a divergence.
func TestAlignLooksAheadSixteen(t *testing.T) {
	t.Parallel()
	var rs []journal.Row
	for i := 1; i <= 40; i++ {
		call := fmt.Sprintf("c%d", i)
		rs = append(rs, prepared(call, i, "n", fmt.Sprintf("step %d", i)), completed(call))
	}
	h := history(t, rs...)
	for _, tt := range []struct {
		dropped int
		same    bool
	}{{1, true}, {10, true}, {16, true}, {17, false}, {25, false}} {
		r := replay.New(h, replay.Align, nil)
		require.True(t, r.Next(inputsOf(ask("n", "step 1"))).Same)
		require.True(t, r.Next(inputsOf(ask("n", "step 2"))).Same)
		want := 3 + tt.dropped
		m := r.Next(inputsOf(ask("n", fmt.Sprintf("step %d", want))))
		require.NotNil(t, m.Rec, "dropped %d", tt.dropped)
		assert.Equal(t, tt.same, m.Same, "dropped %d", tt.dropped)
		if tt.same {
			assert.Equal(t, want, m.Rec.Prepared.Index, "dropped %d: aligned with the call it asks for", tt.dropped)
			for i := 3; i < want; i++ {
				assert.False(t, r.Made(h.AtIndex(i)), "dropped %d: call %d never made", tt.dropped, i)
			}
		} else {
			assert.Equal(t, 3, m.Rec.Prepared.Index, "dropped %d: a divergence at the next position", tt.dropped)
		}
	}
	// A call of another role and node that nothing matches is new.
	r := replay.New(h, replay.Align, nil)
	m := r.Next(inputsOf(&journal.Row{Type: journal.TypePrepared, Role: "critic", Node: "z", Prompt: "?"}))
	assert.Equal(t, replay.Fresh, m.Kind)
	assert.Nil(t, m.Rec)
}

func TestReadRefusesRowsOutOfPlace(t *testing.T) {
	t.Parallel()
	_, err := replay.Read(rows(completed("c1")))
	assert.ErrorContains(t, err, "names call c1, which has no prepared row")
	bad := rows(prepared("c1", 1, "a", "a"))
	bad[1].Seq = 5
	_, err = replay.Read(bad)
	assert.ErrorContains(t, err, "row 2 has seq 5")
	_, err = replay.Read([]journal.Row{{Seq: 1, Type: journal.TypeWarning}})
	assert.ErrorContains(t, err, "no started row")
}

// TestReplayingUntilEveryRecordedCallIsMadeAgain: a resumed script replays until it has made
// every call the journal has and been given every recorded result; one that diverged never
// catches up (a detached resume must not report it as going on).
func TestReplayingUntilEveryRecordedCallIsMadeAgain(t *testing.T) {
	t.Parallel()
	// The journal's only call is open: no recorded result is due, yet the script has not
	// made it again.
	h := history(t, prepared("c1", 1, "a", "a"))
	caught := 0
	r := replay.New(h, replay.Strict, nil)
	r.OnCaughtUp(func() { caught++ })
	assert.True(t, r.Replaying())
	r.Next(inputsOf(ask("a", "a")))
	assert.False(t, r.Replaying())
	assert.Equal(t, 1, caught)

	r = replay.New(h, replay.Strict, nil)
	r.OnCaughtUp(func() { caught++ })
	m := r.Next(inputsOf(ask("a", "edited")))
	require.NotNil(t, m.Divergence)
	assert.True(t, r.Replaying(), "a script that diverged never caught up")
	r.Next(inputsOf(ask("b", "b")))
	assert.True(t, r.Replaying())
	assert.Equal(t, 1, caught, "no second call for the diverged replay")

	assert.False(t, replay.New(nil, replay.Strict, nil).Replaying(), "nothing recorded: nothing to replay")
}

// TestSecondTerminalRowOfAGeneration: a journal of an earlier crw may hold a second terminal
// row in a call's generation (held by a pause, then superseded with no prepared row between).
// The newer row is the call's outcome, and the call is listed once.
func TestSecondTerminalRowOfAGeneration(t *testing.T) {
	t.Parallel()
	h := history(t, prepared("c1", 1, "a", "a"), completed("c1"), prepared("c2", 2, "b", "b"), held("c2", "engine_paused"),
		journal.Row{Type: journal.TypeSuperseded, Call: "c2", Reason: "superseded_by_resume"})
	c2 := h.Call("c2")
	require.NotNil(t, c2.Terminal)
	assert.Equal(t, journal.TypeSuperseded, c2.Terminal.Type)
	assert.Equal(t, []*replay.Call{h.Call("c1"), c2}, h.Outcomes())
	assert.Equal(t, []*replay.Call{h.Call("c1"), c2}, h.Finished)
	assert.Equal(t, []*replay.Call{h.Call("c1"), c2}, h.Order)
}

// TestIssueIndexesAreBoundedByTheRows: a prepared row whose issue index is 0, negative or
// beyond the journal's rows (a trace written to hurt: the replayer would walk up to it) is
// refused as a damaged journal, naming the row.
func TestIssueIndexesAreBoundedByTheRows(t *testing.T) {
	for _, index := range []int{0, -1, 5, 1_000_000_000_000_000_000} {
		_, err := replay.Read(rows(prepared("c1", 1, "a", "p"), completed("c1"), prepared("c2", index, "b", "q")))
		require.Error(t, err, "index %d", index)
		assert.Contains(t, err.Error(), fmt.Sprintf("row 4 (prepared) of call c2 has the issue index %d, outside 1..4", index))
	}
	_, err := replay.Read(rows(prepared("c1", 1, "a", "p"), completed("c1"), prepared("c2", 2, "b", "q")))
	require.NoError(t, err)
}

// A step's attempt a History keeps in 32 bits: one past them (a trace written to hurt) is
// refused, not cut to another number a pull backend would publish again.
func TestStepAttemptsAreBounded(t *testing.T) {
	step := func(attempt int) journal.Row {
		return journal.Row{Type: journal.TypeStepPublished, Call: "c1", K: 1, Marker: "crw:1", Op: "turn", Attempt: attempt}
	}
	for _, attempt := range []int{-1, 1 << 31, 1 << 40} {
		_, err := replay.Read(rows(prepared("c1", 1, "a", "p"), step(attempt)))
		require.Error(t, err, "attempt %d", attempt)
		assert.Contains(t, err.Error(), fmt.Sprintf("row 3 (step_published) of call c1 has the attempt %d, outside 0..2147483647", attempt))
	}
	h, err := replay.Read(rows(prepared("c1", 1, "a", "p"), step(1<<31-1), step(3)))
	require.NoError(t, err)
	assert.EqualValues(t, 1<<31-1, h.Call("c1").StepAttempts)
}

func commitRows(node, commit string) []journal.Row {
	return []journal.Row{{Type: journal.TypeCommitIntent, Node: node, Message: node, Tree: "t-" + commit},
		{Type: journal.TypeCommitResult, Node: node, Commit: commit, Tree: "t-" + commit}}
}

// TestARerunSupersedesTheCommitsMadeAfterTheHeldRow: a pause held c2 after commit k1; the
// process went on and made k2 with the held result. A resume ran c2 again (its second prepared
// row) and made k3 in k2's place. The History holds k1 and k3 where the script commits, k2 as
// superseded; the Replayer of the resume that leaves the record says where (LeftAt), and one
// that goes on with a rerun an earlier process made says it left nothing.
func TestARerunSupersedesTheCommitsMadeAfterTheHeldRow(t *testing.T) {
	t.Parallel()
	var rs []journal.Row
	rs = append(rs, prepared("c1", 1, "a", "a"), completed("c1"))
	rs = append(rs, commitRows("a", "k1")...)
	rs = append(rs, prepared("c2", 2, "b", "b"), held("c2", "host_infra_rate"))
	rs = append(rs, commitRows("b", "k2")...)
	paused := history(t, rs...)
	require.Len(t, paused.Commits, 2, "before a resume every commit is where it was made")
	r := replay.New(paused, replay.Strict, nil)
	r.Next(inputsOf(ask("a", "a")))
	_, left := r.LeftAt()
	assert.False(t, left, "c1 is replayed: the record is not left")
	assert.Equal(t, replay.Rerun, r.Next(inputsOf(ask("b", "b"))).Kind)
	at, left := r.LeftAt()
	require.True(t, left)
	assert.Equal(t, paused.Call("c2").EndSeq, at, "left at c2's held row")
	assert.Less(t, paused.Commits[0].Intent.Seq, at, "k1 came before it")
	assert.Greater(t, paused.Commits[1].Intent.Seq, at, "k2 after it")

	rs = append(rs, journal.Row{Type: journal.TypeStarted, Run: "20261201-000000-abcdef", Backend: "fake"},
		prepared("c2", 2, "b", "b"), completed("c2"))
	rs = append(rs, commitRows("b", "k3")...)
	h := history(t, rs...)
	require.Len(t, h.Commits, 2)
	assert.Equal(t, "k1", h.Commits[0].Result.Commit)
	assert.Equal(t, "k3", h.Commits[1].Result.Commit, "the commit the resume made takes k2's place")
	require.Len(t, h.Superseded, 1)
	assert.Equal(t, "k2", h.Superseded[0].Result.Commit)
	assert.Equal(t, "k3", h.Nodes["b"].Ref, "the node is where git has it")

	// A pause also held c4 in the first process; the resume's process died before it came to
	// c4, and the next one runs c4 again: k3, which a process that never had c4's held
	// result made, stays where it is.
	withC4 := append([]journal.Row{}, rs[:8]...) // up to k2's rows
	withC4 = append(withC4, prepared("c4", 3, "c", "c"), held("c4", "engine_paused"))
	withC4 = append(withC4, rs[8:]...)
	withC4 = append(withC4, journal.Row{Type: journal.TypeStarted, Run: "20261201-000000-abcdef", Backend: "fake"},
		prepared("c4", 3, "c", "c"), completed("c4"))
	h4 := history(t, withC4...)
	require.Len(t, h4.Commits, 2)
	assert.Equal(t, "k3", h4.Commits[1].Result.Commit, "the commit of a process that never had c4's held result")
	require.Len(t, h4.Superseded, 1)
	assert.Equal(t, "k2", h4.Superseded[0].Result.Commit)

	r = replay.New(h, replay.Strict, nil)
	r.Next(inputsOf(ask("a", "a")))
	assert.Equal(t, replay.Replay, r.Next(inputsOf(ask("b", "b"))).Kind)
	_, left = r.LeftAt()
	assert.False(t, left, "the rerun is the record now")
}

// TestNthCallCountsReplayedCalls: a call's order within its node and its role counts the calls
// replayed from the record as well as the new ones, as Index does: a resume numbers them as the
// process that issued them did.
func TestNthCallCountsReplayedCalls(t *testing.T) {
	t.Parallel()
	h := history(t, prepared("c1", 1, "a", "a1"), prepared("c2", 2, "b", "b1"), completed("c2"), completed("c1"),
		prepared("c3", 3, "a", "a2"))
	for _, mode := range []replay.Mode{replay.Strict, replay.Align} {
		r := replay.New(h, mode, nil)
		var got []string
		// The first three are the recorded ones; the last two are new.
		for _, c := range []struct{ role, node, prompt string }{
			{"explorer", "a", "a1"}, {"explorer", "b", "b1"}, {"explorer", "a", "a2"}, {"critic", "b", "b2"}, {"explorer", "a", "a3"},
		} {
			p := inputsOf(ask(c.node, c.prompt))
			p.Role = c.role
			m := r.Next(p)
			require.Nil(t, m.Divergence)
			got = append(got, fmt.Sprintf("%d %s/%s: node_call %d, role_call %d", m.Index, c.role, c.node, m.NodeCall, m.RoleCall))
		}
		assert.Equal(t, []string{
			"1 explorer/a: node_call 1, role_call 1",
			"2 explorer/b: node_call 1, role_call 2",
			"3 explorer/a: node_call 2, role_call 3",
			"4 critic/b: node_call 2, role_call 1",
			"5 explorer/a: node_call 3, role_call 4",
		}, got, "mode %d", mode)
	}
}

// A call is found by its id whatever the id: crw's own ("c" and a number), one that only
// looks like it ("c07" beside "c7"), one numbered past its row (a hand-written trace's, which
// must not make the History allocate up to its number), or another; a new attempt of each
// replaces it under the same id.
func TestCallsAreFoundByEveryKindOfID(t *testing.T) {
	t.Parallel()
	var rs []journal.Row
	for i := 1; i <= 9; i++ {
		id := fmt.Sprintf("c%d", i)
		rs = append(rs, prepared(id, i, "n", "prompt "+id), completed(id))
	}
	rs = append(rs,
		prepared("c07", 10, "n", "zero seven"), completed("c07"),
		prepared("c900", 11, "n", "far"), completed("c900"),
		prepared("c9999999999999999", 12, "n", "farther"), completed("c9999999999999999"),
		prepared("step-a", 13, "n", "named"), completed("step-a"),
		prepared("c12345678901234567890", 14, "n", "long"), completed("c12345678901234567890"),
		prepared("c900", 11, "n", "far again"), completed("c900"),
		prepared("c3", 3, "n", "three again"), completed("c3"),
	)
	h := history(t, rs...)
	for id, prompt := range map[string]string{"c1": "prompt c1", "c7": "prompt c7", "c07": "zero seven", "c3": "three again",
		"c900": "far again", "c9999999999999999": "farther", "step-a": "named", "c12345678901234567890": "long"} {
		c := h.Call(id)
		require.NotNil(t, c, id)
		assert.Equal(t, id, c.ID)
		row, err := h.PreparedRow(c)
		require.NoError(t, err)
		assert.Equal(t, prompt, row.Prompt, id)
	}
	assert.EqualValues(t, 2, h.Call("c900").Attempt)
	assert.EqualValues(t, 2, h.Call("c3").Attempt)
	for _, id := range []string{"c10", "c0", "c", "", "c+1", "c9000", "step-b", "c9999999999999998"} {
		assert.Nil(t, h.Call(id), id)
	}
	assert.Len(t, h.IDs, 14)
	assert.Equal(t, 14, h.Indexed())
	assert.Same(t, h.Call("c07"), h.AtIndex(10))
	assert.Same(t, h.Call("c3"), h.AtIndex(3))
	assert.Nil(t, h.AtIndex(15))
	assert.Nil(t, h.AtIndex(0))
}
