package journal_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/journal"
)

// SummaryRows is a journal that exercises every rule of the fold: a call run again after a
// pause, a later terminal row replacing an earlier one, rows of a call never prepared, a paused
// end followed by a completed one.
func summaryRows() []journal.Row {
	at := time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)
	tk := func(n int64) *journal.Tokens { return &journal.Tokens{Input: n, Total: n} }
	rows := []journal.Row{
		{Type: journal.TypeStarted, Run: "r"},
		{Type: journal.TypePrepared, Call: "c1"},
		{Type: journal.TypeThreadStarted, Call: "c1"},
		{Type: journal.TypeCompleted, Call: "c1", Tokens: tk(10)},
		{Type: journal.TypePrepared, Call: "c2"},
		{Type: journal.TypeHeld, Call: "c2", Reason: "engine_paused", Tokens: tk(1)},
		{Type: journal.TypeEscalation, Call: "c2"},
		{Type: journal.TypeEnded, Status: "paused"},
		{Type: journal.TypeStarted, Run: "r"},
		{Type: journal.TypePrepared, Call: "c2"}, // run again: held is taken back
		{Type: journal.TypeCompleted, Call: "c2", Tokens: tk(100)},
		{Type: journal.TypePrepared, Call: "c3"},
		{Type: journal.TypeHeld, Call: "c3", Reason: "engine_paused"},
		{Type: journal.TypeSuperseded, Call: "c3"}, // replaces held
		{Type: journal.TypePrepared, Call: "c4"},
		{Type: journal.TypeOutcomeUnknown, Call: "c4"},
		{Type: journal.TypeRefused, Call: "c9", Tokens: tk(1000)}, // never prepared
		{Type: journal.TypeWarning, Call: "c4"},
		{Type: journal.TypePrepared, Call: "c5"}, // open
		{Type: journal.TypeEnded, Status: "completed", Result: json.RawMessage(`{"ok":true}`)},
	}
	for i := range rows {
		rows[i].Seq, rows[i].At = uint64(i+1), at.Add(time.Duration(i)*time.Second)
	}
	return rows
}

func TestSummaryFoldsRowsAsTheTimelineCounts(t *testing.T) {
	t.Parallel()
	rows := summaryRows()
	s := journal.NewSummary()
	calls := journal.NewMemIndex()
	for i := range rows {
		require.NoError(t, s.Add(rows[i].ForSummary(), calls))
	}
	assert.Equal(t, &journal.Summary{
		LastSeq: 20, LastStart: 9, Status: "completed", Ended: time.Date(2026, 12, 1, 4, 0, 19, 0, time.UTC),
		Result: json.RawMessage(`{"ok":true}`),
		Calls:  map[journal.CallStatus]int{"completed": 2, "superseded": 1, "unknown": 1},
		Tokens: journal.Tokens{Input: 111, Total: 111},
	}, s)
	assert.Equal(t, journal.MapCallStates{"c1": "completed", "c2": "completed", "c3": "superseded", "c4": "unknown", "c5": ""}, calls.Calls)

	// After the paused end, before the resume: the paused row's status, c2 held.
	s2, err := journal.Summarize(func(fn func(*journal.Row) error) error {
		for i := range rows[:8] {
			if err := fn(&rows[i]); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, "paused", s2.Status)
	assert.Equal(t, map[journal.CallStatus]int{"completed": 1, "held": 1}, s2.Calls)
	assert.Equal(t, uint64(8), s2.LastSeq)
}

func TestSummaryCloneIsApart(t *testing.T) {
	t.Parallel()
	s := journal.NewSummary()
	s.Calls["completed"] = 1
	c := s.Clone()
	c.Calls["completed"] = 5
	assert.Equal(t, 1, s.Calls["completed"])
}

// TestSummaryOfARunTakenAgain: a run whose process ended waiting for a decision and a verdict,
// then taken by a process that died, is under way (crashed), not waiting: its status is gone,
// the decision it asked still waits, and the verdict the ended row listed is for the process
// that takes it next to list again.
func TestSummaryOfARunTakenAgain(t *testing.T) {
	t.Parallel()
	rows := []journal.Row{
		{Type: journal.TypeStarted},
		{Type: journal.TypeDecisionRequested, DecisionID: "keep", Question: "keep?"},
		{Type: journal.TypeEnded, Status: "waiting_decision", Rare: &journal.Rare{Awaited: []journal.PendingDecision{{ID: journal.VerdictPrefix + "c1"}}}},
		{Type: journal.TypeStarted},
	}
	s := journal.NewSummary()
	calls := journal.NewMemIndex()
	for i := range rows {
		rows[i].Seq = uint64(i + 1)
		require.NoError(t, s.Add(rows[i].ForSummary(), calls))
		if i == 2 {
			assert.Equal(t, "waiting_decision", s.Status)
			assert.Len(t, s.Decisions, 2)
		}
	}
	assert.Equal(t, "", s.Status)
	assert.Equal(t, []journal.PendingDecision{{ID: "keep", Question: "keep?"}}, s.Decisions)
}

// outstandingRows exercise every rule of the index: a call open, one whose outcome is unknown,
// one whose unknown outcome got a verdict and then a new attempt that ended unknown again (the
// verdict stands), one unknown and then run again to completion, a commit finished, a refused
// one (no result follows it) and one whose result never came.
func outstandingRows() []journal.Row {
	at := time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)
	rows := []journal.Row{
		{Type: journal.TypeStarted, Run: "r"},
		{Type: journal.TypePrepared, Call: "c1", Node: "a", Role: "explorer"},
		{Type: journal.TypeThreadStarted, Call: "c1", ThreadID: "th1"},
		{Type: journal.TypeTurnStarted, Call: "c1", TurnID: "tu1"},
		{Type: journal.TypeCompleted, Call: "c1"},
		{Type: journal.TypePrepared, Call: "c2", Node: "b", Role: "executor"},
		{Type: journal.TypeThreadStarted, Call: "c2", ThreadID: "th2"},
		{Type: journal.TypeTurnStarted, Call: "c2", TurnID: "tu2"},
		{Type: journal.TypeTurnStarted, Call: "c2", TurnID: "tu2b"},
		{Type: journal.TypeOutcomeUnknown, Call: "c2", Reason: "dispatch_unknown"},
		{Type: journal.TypePrepared, Call: "c10", Node: "c", Role: "reviewer"},
		{Type: journal.TypeOutcomeUnknown, Call: "c10", Reason: "dispatch_unknown"},
		{Type: journal.TypeEffectReconciled, Effect: "c10", Verdict: "applied", By: "ann", Output: json.RawMessage(`{"a": "<b>"}`), OutputDigest: "sha256:x"},
		{Type: journal.TypePrepared, Call: "c10", Node: "c", Role: "reviewer"},
		{Type: journal.TypeOutcomeUnknown, Call: "c10", Reason: "dispatch_unknown"},
		{Type: journal.TypePrepared, Call: "c3", Node: "d", Role: "critic"},
		{Type: journal.TypeOutcomeUnknown, Call: "c3", Reason: "dispatch_unknown"},
		{Type: journal.TypePrepared, Call: "c3", Node: "d", Role: "critic"},
		{Type: journal.TypeCompleted, Call: "c3"},
		{Type: journal.TypeCommitIntent, Node: "b", Ref: "refs/x/b", Tree: "t1", Parent: "p1"},
		{Type: journal.TypeCommitIntent, Node: "e", Status: "no_pending_changes"},
		{Type: journal.TypeCommitResult, Node: "b", Ref: "refs/x/b", Commit: "k1"},
		{Type: journal.TypeCommitIntent, Node: "b", Ref: "refs/x/b", Tree: "t2", Parent: "k1"},
		{Type: journal.TypePrepared, Call: "c4", Node: "a", Role: "explorer"},
		{Type: journal.TypeThreadStarted, Call: "c4", ThreadID: "th4"},
	}
	for i := range rows {
		rows[i].Seq, rows[i].At = uint64(i+1), at.Add(time.Duration(i)*time.Second)
	}
	return rows
}

func TestTheIndexListsWhatIsOutstanding(t *testing.T) {
	t.Parallel()
	rows := outstandingRows()
	sum, idx, err := journal.SummarizeIndexed(func(fn func(*journal.Row) error) error {
		for i := range rows {
			if err := fn(&rows[i]); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []journal.CommitIntent{{Node: "b", Ref: "refs/x/b", Tree: "t2", Parent: "k1"}}, sum.Commits)
	assert.Equal(t, &journal.Outstanding{
		Open: []journal.OpenCall{{Call: "c4", Seq: 24, Node: "a", Role: "explorer", Thread: "th4"}},
		Unknown: []journal.UnknownCall{{OpenCall: journal.OpenCall{Call: "c2", Seq: 6, Node: "b", Role: "executor", Thread: "th2", Turns: []string{"tu2", "tu2b"}},
			Reason: "dispatch_unknown"}},
		Verdicts: []journal.Verdict{{Seq: 13, Call: "c10", Verdict: "applied", By: "ann", At: rows[12].At,
			Output: json.RawMessage(`{"a":"\u003cb\u003e"}`), OutputDigest: "sha256:x"}},
		TotalOpen: 1, TotalUnknown: 1, TotalVerdicts: 1,
	}, idx.Outstanding(10))
	cut := idx.Outstanding(0)
	assert.Empty(t, cut.Open)
	assert.Equal(t, 1, cut.TotalOpen, "a cut list still counts")
}

func TestCallsSortByIssue(t *testing.T) {
	t.Parallel()
	ids := []string{"c10", "x", "c2", "c01", "c1", "c", "b"}
	slices.SortFunc(ids, journal.ByIssue)
	assert.Equal(t, []string{"c1", "c2", "c10", "b", "c", "c01", "x"}, ids)
}

// A run's result is kept in the summary with the same bytes whether the fold reads the rows as
// written or as stored (encoded, which escapes <, > and &, and compacted): a journal's file made
// again from its log says what the writer's said.
func TestTheResultIsKeptTheSameFromTheRowsAsStored(t *testing.T) {
	t.Parallel()
	for _, result := range []string{
		`{"summary":"<b> & c","files":["a>b"]}`, `"plain"`, `{ "a" : [1, 2] }`, `"\u2028 and \\u003c"`, `null`,
	} {
		written := journal.Row{Seq: 1, Type: journal.TypeEnded, Status: "completed", Result: json.RawMessage(result)}
		data, err := json.Marshal(&written)
		require.NoError(t, err)
		var stored journal.Row
		require.NoError(t, json.Unmarshal(data, &stored))
		fromWritten, fromStored := journal.NewSummary(), journal.NewSummary()
		require.NoError(t, fromWritten.Add(written.ForSummary(), journal.NewMemIndex()))
		require.NoError(t, fromStored.Add(stored.ForSummary(), journal.NewMemIndex()))
		assert.Equal(t, string(fromWritten.Result), string(fromStored.Result), result)
		var want, got any
		require.NoError(t, json.Unmarshal([]byte(result), &want))
		require.NoError(t, json.Unmarshal(fromStored.Result, &got))
		assert.Equal(t, want, got, "the same value: %s", result)
	}
	sum := journal.NewSummary()
	require.NoError(t, sum.Add((&journal.Row{Seq: 1, Type: journal.TypeEnded, Status: "completed", Result: json.RawMessage(`{"s":"<x>"}`)}).ForSummary(), journal.NewMemIndex()))
	assert.Equal(t, `{"s":"<x>"}`, string(sum.Result), "as crw's walk of the value wrote it")
}
