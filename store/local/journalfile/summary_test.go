package journalfile_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local/journalfile"
	"github.com/crw-dev/crw/store/local/journalfile/journalfiletest"
)

// summaryRows is a run's journal in three commits: a call completed and a call held by a
// pause, then the pause's end, then a resume that runs the held call again and ends.
func summaryRows() [][]*journal.Row {
	tk := func(n int64) *journal.Tokens { return &journal.Tokens{Output: n, Total: n} }
	return [][]*journal.Row{{
		{Type: journal.TypeStarted, Run: journalfiletest.RunID},
		{Type: journal.TypePrepared, Call: "c1", Index: 1},
		{Type: journal.TypeCompleted, Call: "c1", Tokens: tk(5)},
		{Type: journal.TypePrepared, Call: "c2", Index: 2},
		{Type: journal.TypeHeld, Call: "c2", Reason: "engine_paused"},
	}, {
		{Type: journal.TypeEnded, Status: "paused"},
	}, {
		{Type: journal.TypeStarted, Run: journalfiletest.RunID},
		{Type: journal.TypePrepared, Call: "c2", Index: 2},
		{Type: journal.TypeNullModel, Call: "c2", Tokens: tk(7)},
		{Type: journal.TypeEnded, Status: "completed", Result: json.RawMessage(`3`)},
	}}
}

func readSummary(t *testing.T, path string) *journal.Summary {
	t.Helper()
	sum, run, err := journalfile.ReadSummary(path)
	require.NoError(t, err)
	assert.Equal(t, journalfiletest.RunID, run)
	sum.Ended = time.Time{} // set by Append: compared apart
	return sum
}

var (
	afterPause = &journal.Summary{LastSeq: 6, LastStart: 1, Status: "paused",
		Calls: map[journal.CallStatus]int{"completed": 1, "held": 1}, Tokens: journal.Tokens{Output: 5, Total: 5}}
	afterEnd = &journal.Summary{LastSeq: 10, LastStart: 7, Status: "completed", Result: json.RawMessage(`3`),
		Calls: map[journal.CallStatus]int{"completed": 1, "null_model": 1}, Tokens: journal.Tokens{Output: 12, Total: 12}}
)

// TestSummaryIsCommittedWithTheRows: each commit stores the summary of exactly the rows it
// made durable, which a reader gets without the rows, across a reopen.
func TestSummaryIsCommittedWithTheRows(t *testing.T) {
	t.Parallel()
	j, path := journalfiletest.Create(t)
	batches := summaryRows()
	sum, err := j.Summary()
	require.NoError(t, err)
	assert.Equal(t, journal.NewSummary(), sum)

	_, err = j.Write(batches[0]...)
	require.NoError(t, err)
	sum, err = j.Summary()
	require.NoError(t, err)
	assert.Equal(t, uint64(5), sum.LastSeq)
	assert.Equal(t, map[journal.CallStatus]int{"completed": 1, "held": 1}, sum.Calls)

	// Appended, not committed: not in the summary.
	j.Append(batches[1]...)
	sum, err = j.Summary()
	require.NoError(t, err)
	assert.Equal(t, uint64(5), sum.LastSeq)
	require.NoError(t, j.Close())
	assert.Equal(t, afterPause, readSummary(t, path))

	j = journalfiletest.Reopen(t, path)
	_, err = j.Write(batches[2]...)
	require.NoError(t, err)
	require.NoError(t, j.Close())
	assert.Equal(t, afterEnd, readSummary(t, path))

	ro, err := journalfile.OpenReadOnly(path)
	require.NoError(t, err)
	defer ro.Close()
	sum, err = ro.Summary()
	require.NoError(t, err)
	sum.Ended = time.Time{}
	assert.Equal(t, afterEnd, sum)
}

// TestFailedCommitLeavesTheSummary: a commit that fails stores neither its rows nor their
// summary, in the file and in the handle: neither one that fails before the fold nor one whose
// fold fails half way (a call id too long to be a key).
func TestFailedCommitLeavesTheSummary(t *testing.T) {
	t.Parallel()
	// Each subtest has rows of its own: a journal gives the rows it takes their seq and time.
	for name, fail := range map[string]func(*journalfile.Journal, [][]*journal.Row) error{
		"hook": func(j *journalfile.Journal, batches [][]*journal.Row) error {
			journalfile.SetCommitHook(j, func(first, last uint64) error { return errors.New("disk full") })
			_, err := j.Write(batches[2]...)
			return err
		},
		"fold": func(j *journalfile.Journal, batches [][]*journal.Row) error {
			long := &journal.Row{Type: journal.TypePrepared, Call: strings.Repeat("c", 40000)}
			_, err := j.Write(append(batches[2], long)...)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			batches := summaryRows()
			j, path := journalfiletest.Create(t)
			_, err := j.Write(batches[0]...)
			require.NoError(t, err)
			_, err = j.Write(batches[1]...)
			require.NoError(t, err)
			require.Error(t, fail(j, batches))
			sum, err := j.Summary()
			require.NoError(t, err)
			sum.Ended = time.Time{}
			assert.Equal(t, afterPause, sum)
			j.Close()
			assert.Equal(t, afterPause, readSummary(t, path))
		})
	}
}

// TestJournalWithoutSummary: a journal written before summaries were kept reads as
// ErrNoSummary without its rows, is summarized from its rows by a read-only handle, and gets
// its summary when it is next opened for writing.
func TestJournalWithoutSummary(t *testing.T) {
	t.Parallel()
	j, path := journalfiletest.Create(t)
	for _, b := range summaryRows() {
		_, err := j.Write(b...)
		require.NoError(t, err)
	}
	require.NoError(t, j.Close())
	require.NoError(t, journalfile.DropSummary(path))

	_, _, err := journalfile.ReadSummary(path)
	require.ErrorIs(t, err, journalfile.ErrNoSummary)
	ro, err := journalfile.OpenReadOnly(path)
	require.NoError(t, err)
	sum, err := ro.Summary()
	require.NoError(t, err)
	sum.Ended = time.Time{}
	assert.Equal(t, afterEnd, sum)
	require.NoError(t, ro.Close())

	j = journalfiletest.Reopen(t, path)
	_, err = j.Write(&journal.Row{Type: journal.TypeWarning, Call: "c2"})
	require.NoError(t, err)
	require.NoError(t, j.Close())
	want := *afterEnd
	want.LastSeq = 11
	assert.Equal(t, &want, readSummary(t, path))
}

// TestDamagedSummaryIsRefused: a summary that does not read, or does not cover the rows the
// file holds, is damage: the reader and the writer's open say so.
func TestDamagedSummaryIsRefused(t *testing.T) {
	t.Parallel()
	for name, data := range map[string]string{
		"not json":        `{"last_seq":`,
		"behind the rows": `{"last_seq":4,"calls":{}}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			j, path := journalfiletest.Create(t)
			_, err := j.Write(summaryRows()[0]...)
			require.NoError(t, err)
			require.NoError(t, j.Close())
			require.NoError(t, journalfile.PutSummaryJSON(path, []byte(data)))

			_, _, err = journalfile.ReadSummary(path)
			require.ErrorIs(t, err, journalfile.ErrCorrupt)
			_, err = journalfile.Open(path)
			require.ErrorIs(t, err, journalfile.ErrCorrupt)
			assert.Contains(t, journalfile.Damage(err), "summary")
			// Left as it was, for the test's own check at cleanup to find too.
			require.NoError(t, journalfile.PutSummaryJSON(path, []byte(`{"last_seq":5,"calls":{"completed":1,"held":1}}`)))
		})
	}
}

// TestReadSummaryReadsNoRow: the summary is read without the rows: a row whose bytes are
// damaged does not stop it, while a reader of rows finds the damage.
func TestReadSummaryReadsNoRow(t *testing.T) {
	t.Parallel()
	j, path := journalfiletest.Create(t)
	_, err := j.Write(summaryRows()[0]...)
	require.NoError(t, err)
	require.NoError(t, j.Close())
	row3, err := journalfile.RowBytes(path, 3)
	require.NoError(t, err)
	require.NoError(t, journalfile.PutRowBytes(path, 3, []byte(`{"seq":3,"ty`)))

	sum, _, err := journalfile.ReadSummary(path)
	require.NoError(t, err)
	assert.Equal(t, uint64(5), sum.LastSeq)
	_, err = journalfile.OpenReadOnly(path)
	require.ErrorIs(t, err, journalfile.ErrCorrupt)
	require.NoError(t, journalfile.PutRowBytes(path, 3, row3))
}

// TestReadSummaryOfAHeldJournal: a reader does not wait for a writer's lock.
func TestReadSummaryOfAHeldJournal(t *testing.T) {
	t.Parallel()
	_, path := journalfiletest.Create(t)
	start := time.Now()
	_, _, err := journalfile.ReadSummary(path)
	require.ErrorIs(t, err, journalfile.ErrLocked)
	assert.Less(t, time.Since(start), 2*time.Second, "not the writer's own lock wait")
}

// TestTheIndexIsKeptWithTheRows: the index beside the summary reads from the file without the
// rows, from a handle that holds the journal too; a journal written before it was kept reads
// as ErrNoIndex (its summary still reads) and gets it when it is next opened for writing.
func TestTheIndexIsKeptWithTheRows(t *testing.T) {
	t.Parallel()
	j, path := journalfiletest.Create(t)
	_, err := j.Write(
		&journal.Row{Type: journal.TypeStarted, Run: "r"},
		&journal.Row{Type: journal.TypePrepared, Call: "c1", Node: "n", Role: "executor"},
		&journal.Row{Type: journal.TypeThreadStarted, Call: "c1", ThreadID: "th1"},
		&journal.Row{Type: journal.TypeTurnStarted, Call: "c1", TurnID: "tu1"},
		&journal.Row{Type: journal.TypeOutcomeUnknown, Call: "c1", Reason: "dispatch_unknown"},
		&journal.Row{Type: journal.TypePrepared, Call: "c2", Node: "m", Role: "reviewer"},
		&journal.Row{Type: journal.TypePrepared, Call: "c3", Node: "m", Role: "reviewer"},
		&journal.Row{Type: journal.TypeOutcomeUnknown, Call: "c3", Reason: "dispatch_unknown"},
		&journal.Row{Type: journal.TypeEffectReconciled, Effect: "c3", Verdict: "not_applied", By: "op"},
	)
	require.NoError(t, err)
	held, err := j.Outstanding(100)
	require.NoError(t, err)
	want := &journal.Outstanding{
		Open: []journal.OpenCall{{Call: "c2", Seq: 6, Node: "m", Role: "reviewer"}},
		Unknown: []journal.UnknownCall{{OpenCall: journal.OpenCall{Call: "c1", Seq: 2, Node: "n", Role: "executor", Thread: "th1", Turns: []string{"tu1"}},
			Reason: "dispatch_unknown"}},
		Verdicts:  []journal.Verdict{{Seq: 9, Call: "c3", Verdict: "not_applied", By: "op", At: held.Verdicts[0].At}},
		TotalOpen: 1, TotalUnknown: 1, TotalVerdicts: 1,
	}
	assert.Equal(t, want, held, "from the handle that holds it")
	require.NoError(t, j.Close())
	got, run, err := journalfile.ReadOutstanding(path, 100)
	require.NoError(t, err)
	assert.Equal(t, journalfiletest.RunID, run)
	got.Verdicts[0].At = want.Verdicts[0].At // read back in UTC
	assert.Equal(t, want, got, "from the file")

	require.NoError(t, journalfile.DropIndex(path))
	_, _, err = journalfile.ReadOutstanding(path, 100)
	require.ErrorIs(t, err, journalfile.ErrNoIndex)
	_, _, err = journalfile.ReadSummary(path)
	require.NoError(t, err, "the summary reads without the index")

	j = journalfiletest.Reopen(t, path)
	_, err = j.Write(&journal.Row{Type: journal.TypeCompleted, Call: "c2"})
	require.NoError(t, err)
	require.NoError(t, j.Close())
	got, _, err = journalfile.ReadOutstanding(path, 100)
	require.NoError(t, err)
	got.Verdicts[0].At = want.Verdicts[0].At
	want.Open, want.TotalOpen = []journal.OpenCall{}, 0
	assert.Equal(t, want, got, "made again when the journal was opened for writing")
}

// TestTheIndexIsTheFoldOfTheRowsAnyWayTheyAreCommitted: a commit's fold reads and writes each
// record it touches once (staged), so a call's rows folded in one commit must leave the index a
// row per commit leaves, which is the fold of the rows read back. Random journals of a few calls
// that go through every record the index keeps: open, unknown, verdicts, a call prepared again.
func TestTheIndexIsTheFoldOfTheRowsAnyWayTheyAreCommitted(t *testing.T) {
	t.Parallel()
	for seed := range int64(40) {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		rows := randomIndexRows(rng)
		j, path := journalfiletest.Create(t)
		for len(rows) > 0 {
			n := min(len(rows), 1+rng.IntN(6))
			_, err := j.Write(rows[:n]...)
			require.NoError(t, err)
			rows = rows[n:]
		}
		got, err := j.Outstanding(1000)
		require.NoError(t, err)
		sum, err := j.Summary()
		require.NoError(t, err)
		all, err := j.Rows()
		require.NoError(t, err)
		require.NoError(t, j.Close())
		wantSum, idx, err := journal.SummarizeIndexed(func(fn func(*journal.Row) error) error {
			for i := range all {
				if err := fn(&all[i]); err != nil {
					return err
				}
			}
			return nil
		})
		require.NoError(t, err)
		want := idx.Outstanding(1000)
		want.Commits = wantSum.Commits
		assert.Equal(t, want, got, "seed %d: the index", seed)
		assert.Equal(t, wantSum, sum, "seed %d: the summary", seed)
		journalfiletest.Check(t, path)
	}
}

// randomIndexRows is a started row and 30 rows of calls c1..c4 in an order a run could write
// them or a hand-written journal holds them: prepared, thread, turn, terminal rows of every
// kind (outcome_unknown among them), verdicts on unknown outcomes, calls prepared again.
func randomIndexRows(rng *rand.Rand) []*journal.Row {
	rows := []*journal.Row{{Type: journal.TypeStarted, Run: journalfiletest.RunID}}
	ends := []string{journal.TypeCompleted, journal.TypeOutcomeUnknown, journal.TypeHeld, journal.TypeRefused, journal.TypeSuperseded}
	for range 30 {
		call := fmt.Sprintf("c%d", 1+rng.IntN(4))
		switch k := rng.IntN(10); {
		case k < 3:
			rows = append(rows, &journal.Row{Type: journal.TypePrepared, Call: call, Node: "n" + call, Role: "executor"})
		case k < 5:
			rows = append(rows, &journal.Row{Type: journal.TypeThreadStarted, Call: call, ThreadID: "th-" + call})
		case k < 7:
			rows = append(rows, &journal.Row{Type: journal.TypeTurnStarted, Call: call, TurnID: fmt.Sprintf("tu%d", len(rows))})
		case k < 9:
			rows = append(rows, &journal.Row{Type: ends[rng.IntN(len(ends))], Call: call, Reason: "dispatch_unknown"})
		default:
			rows = append(rows, &journal.Row{Type: journal.TypeEffectReconciled, Effect: call, Verdict: "not_applied", By: "op"})
		}
	}
	return rows
}
