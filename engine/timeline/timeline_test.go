package timeline

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// bodiesRows: c2 ends before c1, which a pause holds and a resume prepares again (with another
// prompt) and completes after c3; c4 stays open.
func bodiesRows() []journal.Row {
	at := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	rows := []journal.Row{
		{Type: journal.TypeStarted, Run: "r1", Workflow: "wf.js", Backend: "fake"},
		{Type: journal.TypePrepared, Call: "c1", Index: 1, Role: "explorer", Node: "a", Prompt: "look"},
		{Type: journal.TypePrepared, Call: "c2", Index: 2, Role: "critic", Node: "b", Prompt: "judge"},
		{Type: journal.TypeThreadStarted, Call: "c2", ThreadID: "t2", Model: "m", Effort: "low"},
		{Type: journal.TypeTurnStarted, Call: "c2", K: 1},
		{Type: journal.TypeTurnStarted, Call: "c2", K: 2, Repair: "fix it"},
		{Type: journal.TypeCompleted, Call: "c2", Output: json.RawMessage(`{"v":2}`), RepairUsed: true, Tokens: &journal.Tokens{Input: 5, Total: 5}},
		{Type: journal.TypeThreadStarted, Call: "c1", ThreadID: "t1"},
		{Type: journal.TypeTurnStarted, Call: "c1", K: 1},
		{Type: journal.TypeHeld, Call: "c1", Reason: "engine_paused"},
		{Type: journal.TypeEnded, Status: "paused"},
		{Type: journal.TypeStarted, Run: "r1"},
		{Type: journal.TypePrepared, Call: "c3", Index: 3, Role: "critic", Node: "b", Prompt: "again"},
		{Type: journal.TypeCompleted, Call: "c3", Output: json.RawMessage(`3`)},
		{Type: journal.TypePrepared, Call: "c1", Index: 1, Role: "explorer", Node: "a", Prompt: "look again"},
		{Type: journal.TypeThreadStarted, Call: "c1", ThreadID: "t1b"},
		{Type: journal.TypeTurnStarted, Call: "c1", K: 1},
		{Type: journal.TypeCompleted, Call: "c1", Output: json.RawMessage(`"one"`), Tokens: &journal.Tokens{Input: 7, Total: 7}},
		{Type: journal.TypePrepared, Call: "c4", Index: 4, Role: "explorer", Node: "a", Prompt: "open"},
	}
	for i := range rows {
		rows[i].Seq, rows[i].At = uint64(i+1), at.Add(time.Duration(i)*time.Second)
	}
	return rows
}

// The second reading gives every call what a fold that kept bodies has, in the same order,
// each only once every call issued before it was whole, and lets go of what it handed over.
func TestBodiesGiveWhatAFoldKeepingThemHas(t *testing.T) {
	rows := bodiesRows()
	want := Summarize(rows)
	require.Len(t, want.Calls, 4)
	assert.Equal(t, "look again", want.Calls[0].Prompt)
	assert.Equal(t, 2, want.Calls[0].Attempts)
	assert.Equal(t, "fix it", want.Calls[1].Repair)
	assert.JSONEq(t, `{"v":2}`, string(want.Calls[1].Output))
	assert.Equal(t, "crwh1:r1:c2", want.Calls[1].Handle)
	assert.Equal(t, store.Counts{"completed": 3}, want.Counts)
	assert.Equal(t, int64(12), want.Tokens.Total)

	f := NewFold(Options{})
	for i := range rows {
		f.Add(&rows[i])
	}
	lean := f.Timeline()
	for _, c := range lean.Calls {
		assert.Empty(t, c.Prompt+c.Repair+string(c.Output), "no bodies are kept: %s", c.Call)
	}
	assert.Equal(t, want.Head, f.Head())
	assert.Equal(t, want.Tail, f.Tail())

	var got []Call
	var at []uint64 // the seq of the row read when each call was handed over
	var seq uint64
	b := f.Bodies(func(c *Call) error {
		got, at = append(got, *c), append(at, seq)
		return nil
	})
	for i := range rows {
		seq = rows[i].Seq
		require.NoError(t, b.Add(&rows[i]))
	}
	assert.Len(t, got, 3, "c4 is open: it waits for the end")
	seq = 0
	require.NoError(t, b.Finish())
	assert.Equal(t, want.Calls, got)
	// c1 and c2 wait for c1's second generation's end (seq 18), c3 too; c4 for Finish.
	assert.Equal(t, []uint64{18, 18, 18, 0}, at)
	assert.Empty(t, f.bodies, "what was handed over is let go")

	// A row written after the fold read its rows is not the timeline's.
	extra := journal.Row{Seq: uint64(len(rows) + 1), Type: journal.TypeCompleted, Call: "c4", Output: json.RawMessage(`4`)}
	b = f.Bodies(func(*Call) error { return nil })
	assert.ErrorIs(t, b.Add(&extra), ErrRead)
}

// A fold of one call keeps that call alone, its bodies included.
func TestFoldOfOneCall(t *testing.T) {
	rows := bodiesRows()
	f := NewFold(Options{Call: "c2"})
	for i := range rows {
		f.Add(&rows[i])
	}
	tl := f.Timeline()
	require.Len(t, tl.Calls, 1)
	c := tl.Calls[0]
	assert.Equal(t, "c2", c.Call)
	assert.Equal(t, "judge", c.Prompt)
	assert.Equal(t, "fix it", c.Repair)
	assert.JSONEq(t, `{"v":2}`, string(c.Output))
	assert.Equal(t, 2, c.Turns)
	assert.Equal(t, int64(4000), c.DurationMS)
	assert.Equal(t, store.Counts{"completed": 1}, tl.Counts)
	assert.Equal(t, int64(5), tl.Tokens.Total)
}

// A run a process took again after it ended paused has not ended, whatever became of that
// process: the timeline says what the journal's summary says.
func TestAPausedRunTakenAgainHasNotEnded(t *testing.T) {
	rows := bodiesRows()
	for _, upTo := range []struct {
		rows int
		want store.RunStatus
	}{{11, store.RunPaused}, {12, ""}, {len(rows), ""}} {
		tl := Summarize(rows[:upTo.rows])
		assert.Equal(t, upTo.want, tl.Status, "the first %d rows", upTo.rows)
		assert.Equal(t, upTo.want == store.RunPaused, tl.Ended != nil, "the first %d rows", upTo.rows)
		var sum journal.Summary
		sum.Calls = map[journal.CallStatus]int{}
		idx := journal.NewMemIndex()
		for i := range rows[:upTo.rows] {
			require.NoError(t, sum.Add(rows[i].ForSummary(), idx))
		}
		assert.Equal(t, string(upTo.want), sum.Status, "the summary of the first %d rows", upTo.rows)
	}
}

// A resume_changed row that names a workflow is the one the timeline names, as status does.
func TestTheTimelineNamesTheWorkflowAResumeGoesOnWith(t *testing.T) {
	rows := bodiesRows()
	changed := journal.ResumeChanged{By: "t", Workflow: "edited.js", ScriptDigest: "sha256:00"}.Row()
	changed.Seq = rows[10].Seq
	rows = append(rows[:11], append([]journal.Row{*changed}, rows[11:]...)...)
	for i := range rows {
		rows[i].Seq = uint64(i + 1)
	}
	assert.Equal(t, "wf.js", Summarize(rows[:11]).Workflow)
	assert.Equal(t, "edited.js", Summarize(rows).Workflow)
	budgetOnly := journal.ResumeChanged{By: "t", Budget: new(int64(5))}.Row()
	budgetOnly.Seq = uint64(len(rows) + 1)
	assert.Equal(t, "edited.js", Summarize(append(rows, *budgetOnly)).Workflow, "a change that names no workflow keeps it")
}

// TestAFoldOfManyCalls: a run of more calls than a chunk of entries holds, a call of the first
// chunk run again at the end, folds to every call in order, each its own, and its bodies'
// second reading gives each call its prompt and output.
func TestAFoldOfManyCalls(t *testing.T) {
	const calls = 2500 // three chunks of entries
	at := time.Date(2026, 12, 8, 2, 0, 0, 0, time.UTC)
	rows := []journal.Row{{Type: journal.TypeStarted, Run: "r1"}}
	for i := 1; i <= calls; i++ {
		id := fmt.Sprintf("c%d", i)
		rows = append(rows,
			journal.Row{Type: journal.TypePrepared, Call: id, Index: i, Role: "reviewer", Node: "n", Prompt: "prompt " + id, At: at},
			journal.Row{Type: journal.TypeThreadStarted, Call: id, ThreadID: "t-" + id},
			journal.Row{Type: journal.TypeTurnStarted, Call: id, K: 1})
		end := journal.Row{Type: journal.TypeCompleted, Call: id, Output: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), At: at.Add(time.Duration(i) * time.Millisecond)}
		if i == 5 {
			end = journal.Row{Type: journal.TypeHeld, Call: id, Reason: "engine_paused"}
		}
		rows = append(rows, end)
	}
	rows = append(rows,
		journal.Row{Type: journal.TypePrepared, Call: "c5", Index: 5, Role: "reviewer", Node: "n", Prompt: "prompt c5 again"},
		journal.Row{Type: journal.TypeCompleted, Call: "c5", Output: json.RawMessage(`{"n":5}`)})
	for i := range rows {
		rows[i].Seq = uint64(i + 1)
	}

	f := NewFold(Options{})
	for i := range rows {
		f.Add(&rows[i])
	}
	tl := f.Timeline()
	require.Len(t, tl.Calls, calls)
	for i, c := range tl.Calls {
		id := fmt.Sprintf("c%d", i+1)
		require.Equal(t, id, c.Call)
		assert.Equal(t, i+1, c.Index)
		assert.Equal(t, journal.StatusCompleted, c.Status, id)
		if id == "c5" {
			assert.Equal(t, 2, c.Attempts)
			assert.Equal(t, uint64(len(rows)), c.EndSeq)
		} else {
			assert.Equal(t, 1, c.Attempts, id)
			assert.Equal(t, "t-"+id, c.ThreadID)
			assert.Equal(t, uint64(4*(i+1)+1), c.EndSeq, id)
		}
	}
	assert.Equal(t, calls, tl.Counts[journal.StatusCompleted])

	var emitted []string
	b := f.Bodies(func(c *Call) error {
		want := "prompt " + c.Call
		if c.Call == "c5" {
			want += " again"
		}
		assert.Equal(t, want, c.Prompt)
		assert.JSONEq(t, fmt.Sprintf(`{"n":%s}`, c.Call[1:]), string(c.Output))
		emitted = append(emitted, c.Call)
		return nil
	})
	for i := range rows {
		require.NoError(t, b.Add(&rows[i]))
	}
	require.NoError(t, b.Finish())
	require.Len(t, emitted, calls)
	for i, id := range emitted {
		require.Equal(t, fmt.Sprintf("c%d", i+1), id)
	}
}
