package journal_test

import (
	"encoding/json"
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
	calls := journal.MapCallStates{}
	for i := range rows {
		require.NoError(t, s.Add(rows[i].ForSummary(), calls))
	}
	assert.Equal(t, &journal.Summary{
		LastSeq: 20, Status: "completed", Ended: time.Date(2026, 12, 1, 4, 0, 19, 0, time.UTC),
		Result: json.RawMessage(`{"ok":true}`),
		Calls:  map[journal.CallStatus]int{"completed": 2, "superseded": 1, "unknown": 1},
		Tokens: journal.Tokens{Input: 111, Total: 111},
	}, s)
	assert.Equal(t, journal.MapCallStates{"c1": "completed", "c2": "completed", "c3": "superseded", "c4": "unknown", "c5": ""}, calls)

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
	calls := journal.MapCallStates{}
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
