package journalfile_test

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local/journalfile"
	"github.com/crw-dev/crw/store/local/journalfile/journalfiletest"
)

func TestCommitCounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		do          func(t *testing.T, j *journalfile.Journal)
		wantRows    uint64
		wantCommits uint64
	}{
		{name: "one Write per row, one commit each", wantRows: 20, wantCommits: 20, do: func(t *testing.T, j *journalfile.Journal) {
			for _, r := range journalfiletest.SampleRows(20) {
				_, err := j.Write(r)
				require.NoError(t, err)
			}
		}},
		{name: "Append then Sync, row by row", wantRows: 5, wantCommits: 5, do: func(t *testing.T, j *journalfile.Journal) {
			for _, r := range journalfiletest.SampleRows(5) {
				require.NoError(t, j.Sync(j.Append(r)))
			}
		}},
		{name: "many Appends, one Sync", wantRows: 7, wantCommits: 1, do: func(t *testing.T, j *journalfile.Journal) {
			var seq uint64
			for _, r := range journalfiletest.SampleRows(7) {
				seq = j.Append(r)
			}
			require.NoError(t, j.Sync(seq))
		}},
		{name: "Sync of an early seq takes everything pending", wantRows: 6, wantCommits: 1, do: func(t *testing.T, j *journalfile.Journal) {
			first := j.Append(journalfiletest.SampleRows(1)...)
			j.Append(journalfiletest.SampleRows(5)...)
			require.NoError(t, j.Sync(first))
			require.NoError(t, j.Sync(6), "already durable")
		}},
		{name: "Write of several rows", wantRows: 3, wantCommits: 1, do: func(t *testing.T, j *journalfile.Journal) {
			seq, err := j.Write(journalfiletest.SampleRows(3)...)
			require.NoError(t, err)
			require.Equal(t, uint64(3), seq)
		}},
		{name: "Sync of durable seqs commits nothing", wantRows: 1, wantCommits: 1, do: func(t *testing.T, j *journalfile.Journal) {
			_, err := j.Write(journalfiletest.SampleRows(1)...)
			require.NoError(t, err)
			require.NoError(t, j.Sync(0))
			require.NoError(t, j.Sync(1))
			_, err = j.Write()
			require.NoError(t, err)
		}},
		{name: "Append alone commits nothing", wantRows: 4, wantCommits: 0, do: func(t *testing.T, j *journalfile.Journal) {
			j.Append(journalfiletest.SampleRows(4)...)
			time.Sleep(20 * time.Millisecond)
			require.Equal(t, uint64(0), j.DurableSeq())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j, _ := journalfiletest.Create(t)
			tt.do(t, j)
			assert.Equal(t, tt.wantRows, j.LastSeq())
			assert.Equal(t, tt.wantCommits, journalfile.CommitCount(j))
		})
	}
}

func TestSyncBeyondAppended(t *testing.T) {
	t.Parallel()
	j, _ := journalfiletest.Create(t)
	j.Append(journalfiletest.SampleRows(2)...)
	err := j.Sync(3)
	require.ErrorContains(t, err, "only 2 rows")
	require.NoError(t, j.Sync(2), "a bad Sync does not poison")
}

func TestCloseFlushes(t *testing.T) {
	t.Parallel()
	j, path := journalfiletest.Create(t)
	j.Append(journalfiletest.SampleRows(3)...)
	hooked := false
	// Nobody waits on this row; Close must still commit it and run its hook.
	j.AppendThen(&journal.Row{Type: journal.TypeWarning, Detail: "last"}, func() { hooked = true })
	require.NoError(t, j.Close())
	assert.True(t, hooked)

	for name, err := range map[string]error{
		"Sync":  j.Sync(1),
		"Close": j.Close(),
		"Write": func() error { _, err := j.Write(journalfiletest.SampleRows(1)...); return err }(),
		"Rows":  func() error { _, err := j.Rows(); return err }(),
	} {
		assert.ErrorIs(t, err, journalfile.ErrClosed, name)
	}
	assert.Equal(t, uint64(0), j.Append(journalfiletest.SampleRows(1)...), "rows are kept out")

	j = journalfiletest.Reopen(t, path)
	assert.Equal(t, uint64(4), j.LastSeq())
}

func TestAppendThenCommitsWithoutSync(t *testing.T) {
	t.Parallel()
	j, _ := journalfiletest.Create(t)
	done := make(chan uint64, 1)
	seq := j.AppendThen(&journal.Row{Type: journal.TypeWarning}, func() { done <- j.DurableSeq() })
	select {
	case durable := <-done:
		assert.GreaterOrEqual(t, durable, seq, "the hook runs once the row is durable")
	case <-time.After(10 * time.Second):
		t.Fatal("hook never ran")
	}
}

// TestAppendsNobodySyncsAreCommittedPastAMegabyte: rows appended and never synced (a fan-out
// whose calls wait for the pool writes a prepared row each and syncs none) are committed once
// a megabyte of them is buffered, not kept in memory until someone syncs.
func TestAppendsNobodySyncsAreCommittedPastAMegabyte(t *testing.T) {
	t.Parallel()
	j, _ := journalfiletest.Create(t)
	committed := make(chan struct{}, 1)
	j.OnCommit(func(uint64) {
		select {
		case committed <- struct{}{}:
		default:
		}
	})
	big := strings.Repeat("x", 64<<10)
	for i := 0; i < 15; i++ {
		j.Append(&journal.Row{Type: journal.TypeWarning, Detail: big})
	}
	assert.Equal(t, uint64(0), journalfile.CommitCount(j), "under a megabyte stays buffered")
	j.Append(&journal.Row{Type: journal.TypeWarning, Detail: big}, &journal.Row{Type: journal.TypeWarning, Detail: big})
	select {
	case <-committed:
	case <-time.After(time.Minute):
		t.Fatal("no commit came")
	}
	require.NoError(t, j.Sync(j.LastSeq()))
	assert.Equal(t, uint64(17), j.DurableSeq())
}

// TestAppendThenOrder checks the engine's contract: hooks run in seq order,
// each after its row is durable, and all hooks of one commit before any of
// the next, whatever mix of goroutines appends.
func TestAppendThenOrder(t *testing.T) {
	t.Parallel()
	const (
		goroutines = 16
		perG       = 200
	)
	j, path := journalfiletest.Create(t)

	type call struct {
		seq, durable  uint64
		started, done int // commits started and finished when the hook ran
	}
	var (
		mu      sync.Mutex
		batches [][2]uint64 // first and last seq of each commit, in order
		calls   []call
		hooks   sync.WaitGroup
		want    = make(map[uint64]bool)
		wg      sync.WaitGroup
	)
	journalfile.SetCommitHook(j, func(first, last uint64) error {
		mu.Lock()
		batches = append(batches, [2]uint64{first, last})
		mu.Unlock()
		return nil
	})
	// The hook reads r.Seq, not AppendThen's result: the hook may run
	// before AppendThen has returned to its caller.
	record := func(r *journal.Row) func() {
		return func() {
			defer hooks.Done()
			mu.Lock()
			calls = append(calls, call{seq: r.Seq, durable: j.DurableSeq(), started: len(batches), done: int(journalfile.CommitCount(j))})
			mu.Unlock()
		}
	}
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perG {
				r := &journal.Row{Type: journal.TypeCompleted, Call: "c", Index: g*perG + i}
				switch i % 5 {
				case 0: // a plain row between hooked ones
					j.Append(r)
				case 3: // a hooked row whose caller also waits
					hooks.Add(1)
					seq := j.AppendThen(r, record(r))
					mu.Lock()
					want[seq] = true
					mu.Unlock()
					assert.NoError(t, j.Sync(seq))
				default:
					hooks.Add(1)
					seq := j.AppendThen(r, record(r))
					mu.Lock()
					want[seq] = true
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	hooks.Wait()

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, calls, len(want))
	for i, c := range calls {
		assert.True(t, want[c.seq], "hook for seq %d that was not hooked", c.seq)
		assert.GreaterOrEqual(t, c.durable, c.seq, "hook for seq %d ran before it was durable", c.seq)
		if i > 0 {
			require.Less(t, calls[i-1].seq, c.seq, "hooks out of seq order at %d", i)
		}
		// The hook ran after the commit holding its row and before the
		// next commit began.
		require.Equal(t, c.started, c.done, "hook for seq %d ran during a commit", c.seq)
		b := batches[c.started-1]
		require.True(t, b[0] <= c.seq && c.seq <= b[1], "hook for seq %d ran after commit %d (%d-%d)", c.seq, c.started, b[0], b[1])
	}
	t.Logf("%d rows, %d hooks, %d commits", j.LastSeq(), len(calls), len(batches))
	require.NoError(t, j.Close())

	j = journalfiletest.Reopen(t, path)
	rows, err := j.Rows()
	require.NoError(t, err)
	require.Len(t, rows, goroutines*perG)
}

// TestGroupCommit holds the first commit open while 15 more writers arrive;
// they must all go in the one next commit.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	j, _ := journalfiletest.Create(t)
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	journalfile.SetCommitHook(j, func(first, last uint64) error {
		once.Do(func() {
			close(entered)
			<-release
		})
		return nil
	})

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := j.Write(journalfiletest.SampleRows(1)...)
		assert.NoError(t, err)
	}()
	<-entered
	for range 15 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := j.Write(journalfiletest.SampleRows(1)...)
			assert.NoError(t, err)
		}()
	}
	require.Eventually(t, func() bool { return journalfile.PendingLen(j) == 15 }, time.Minute, time.Millisecond)
	close(release)
	wg.Wait()

	assert.Equal(t, uint64(16), j.DurableSeq())
	assert.Equal(t, uint64(2), journalfile.CommitCount(j))
}

func TestGroupCommitConcurrentWriters(t *testing.T) {
	t.Parallel()
	const goroutines, perG = 16, 50
	j, _ := journalfiletest.Create(t)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, r := range journalfiletest.SampleRows(perG) {
				seq, err := j.Write(r)
				assert.NoError(t, err)
				assert.Equal(t, r.Seq, seq)
				assert.GreaterOrEqual(t, j.DurableSeq(), seq)
			}
		}()
	}
	wg.Wait()
	rows, commits := j.LastSeq(), journalfile.CommitCount(j)
	t.Logf("%d rows in %d commits", rows, commits)
	require.Equal(t, uint64(goroutines*perG), rows)
	assert.Less(t, commits, rows, "concurrent writers must share commits")
}

func TestPoison(t *testing.T) {
	t.Parallel()
	diskFull := errors.New("disk full")
	tests := []struct {
		name string
		// fail makes the next commit (or Append) fail and returns the
		// failing call's error.
		fail    func(t *testing.T, j *journalfile.Journal) error
		wantErr string
		wantIs  error
		// rows on disk afterwards
		wantRows int
	}{
		{
			name: "another writer took the next key",
			fail: func(t *testing.T, j *journalfile.Journal) error {
				require.NoError(t, journalfile.PutRaw(j, 3, []byte(`{"seq":3,"type":"warning","at":"2026-01-01T00:00:00Z"}`)))
				_, err := j.Write(journalfiletest.SampleRows(1)...)
				return err
			},
			wantErr:  "journal: commit rows 3-3: first new row is 3 but the file ends at 3",
			wantRows: 3,
		},
		{
			name: "commit fails",
			fail: func(t *testing.T, j *journalfile.Journal) error {
				journalfile.SetCommitHook(j, func(first, last uint64) error { return diskFull })
				j.Append(journalfiletest.SampleRows(2)...)
				return j.Sync(j.LastSeq())
			},
			wantErr:  "journal: commit rows 3-4: disk full",
			wantIs:   diskFull,
			wantRows: 2,
		},
		{
			name: "row cannot be encoded",
			fail: func(t *testing.T, j *journalfile.Journal) error {
				j.Append(journalfiletest.SampleRows(2)...) // buffered, then dropped by the poison
				seq := j.Append(&journal.Row{Type: journal.TypeCompleted, Output: json.RawMessage(`{"half":`)})
				assert.Equal(t, uint64(0), seq)
				return j.Sync(seq)
			},
			wantErr:  "journal: encode row 5 (completed)",
			wantRows: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j, path := journalfiletest.Create(t)
			_, err := j.Write(journalfiletest.SampleRows(2)...)
			require.NoError(t, err)

			err = tt.fail(t, j)
			require.ErrorContains(t, err, tt.wantErr)
			if tt.wantIs != nil {
				require.ErrorIs(t, err, tt.wantIs)
			}

			// The same error, from every later call.
			hooked := false
			assert.Equal(t, uint64(0), j.Append(journalfiletest.SampleRows(1)...))
			assert.Equal(t, uint64(0), j.AppendThen(journalfiletest.SampleRows(1)[0], func() { hooked = true }))
			assert.Same(t, err, j.Sync(0))
			assert.Same(t, err, j.Sync(1), "even a durable seq")
			_, werr := j.Write(journalfiletest.SampleRows(1)...)
			assert.Same(t, err, werr)
			assert.Same(t, err, j.Close())
			assert.False(t, hooked)

			j = journalfiletest.Reopen(t, path)
			rows, rerr := j.Rows()
			require.NoError(t, rerr)
			assert.Len(t, rows, tt.wantRows)
		})
	}
}

func TestPoisonWakesWaiters(t *testing.T) {
	t.Parallel()
	j, _ := journalfiletest.Create(t)
	entered := make(chan struct{})
	release := make(chan struct{})
	fail := errors.New("io error")
	journalfile.SetCommitHook(j, func(first, last uint64) error {
		close(entered)
		<-release
		return fail
	})
	errs := make(chan error, 8)
	go func() { _, err := j.Write(journalfiletest.SampleRows(1)...); errs <- err }()
	<-entered
	for range 7 {
		go func() { _, err := j.Write(journalfiletest.SampleRows(1)...); errs <- err }()
	}
	require.Eventually(t, func() bool { return journalfile.PendingLen(j) == 7 }, time.Minute, time.Millisecond)
	close(release)
	for range 8 {
		assert.ErrorIs(t, <-errs, fail)
	}
	assert.ErrorIs(t, j.Close(), fail)
}

// TestACommitWaitsForTheWritersExpected: a writer Expect announced has its rows in the commit
// another asked for first, and the writer that asked waits for it; once every writer has
// asked, one commit holds all their rows.
func TestACommitWaitsForTheWritersExpected(t *testing.T) {
	t.Parallel()
	j, _ := journalfiletest.Create(t)
	journalfile.SetMaxHold(j, time.Hour) // the hold ends when the writers come, not by its bound
	var batches [][2]uint64
	journalfile.SetCommitHook(j, func(first, last uint64) error {
		batches = append(batches, [2]uint64{first, last})
		return nil
	})
	doneA, doneB := j.Expect(), j.Expect()
	seqA := j.Append(journalfiletest.SampleRows(1)...)
	doneA()
	synced := make(chan error, 1)
	go func() { synced <- j.Sync(seqA) }()
	require.Eventually(t, func() bool { return journalfile.Asked(j) || len(synced) > 0 }, time.Minute, time.Millisecond)
	select {
	case err := <-synced:
		t.Fatalf("the first writer's commit did not wait for the second (%v)", err)
	default:
	}
	seqB := j.Append(journalfiletest.SampleRows(2)...)
	doneB()
	doneB() // twice: counted once
	require.NoError(t, <-synced)
	require.NoError(t, j.Sync(seqB))
	assert.Equal(t, [][2]uint64{{1, 3}}, batches, "one commit of both writers' rows")
	assert.Equal(t, 0, journalfile.Expected(j))
}

// TestAHoldRunsOut: a writer announced that never asks holds a commit no longer than the
// bound, and not the next: the hold forgets it, and its late done counts for nothing.
func TestAHoldRunsOut(t *testing.T) {
	t.Parallel()
	j, _ := journalfiletest.Create(t)
	journalfile.SetMaxHold(j, time.Millisecond)
	late := j.Expect()
	_, err := j.Write(journalfiletest.SampleRows(1)...)
	require.NoError(t, err, "committed once the hold ran out")
	assert.Equal(t, 0, journalfile.Expected(j), "the writer that did not come is forgotten")
	journalfile.SetMaxHold(j, time.Hour)
	_, err = j.Write(journalfiletest.SampleRows(1)...)
	require.NoError(t, err, "not held again for it")
	done := j.Expect()
	late()
	assert.Equal(t, 1, journalfile.Expected(j), "its done, late, takes nothing from a later count")
	done()
	assert.Equal(t, 0, journalfile.Expected(j))
}

// TestCloseEndsAHold: a journal closed while its committer waits for a writer that never
// comes commits what it has and closes.
func TestCloseEndsAHold(t *testing.T) {
	t.Parallel()
	j, path := journalfiletest.Create(t)
	journalfile.SetMaxHold(j, time.Hour)
	j.Expect()
	seq := j.Append(journalfiletest.SampleRows(1)...)
	synced := make(chan error, 1)
	go func() { synced <- j.Sync(seq) }()
	require.Eventually(t, func() bool { return journalfile.Asked(j) }, time.Minute, time.Millisecond)
	require.NoError(t, j.Close())
	require.NoError(t, <-synced)
	journalfiletest.Check(t, path)
}

// TestAJournalFencedWhileItHoldsCommitsNothing: a lease lost while the committer waits for the
// writers announced drops the pending rows; the committer then takes no empty batch (it read
// the batch's first row and the process died), the Sync says why, and Close closes.
func TestAJournalFencedWhileItHoldsCommitsNothing(t *testing.T) {
	t.Parallel()
	j, _ := journalfiletest.Create(t)
	journalfile.SetMaxHold(j, time.Hour)
	j.Expect()
	seq := j.Append(journalfiletest.SampleRows(1)...)
	synced := make(chan error, 1)
	go func() { synced <- j.Sync(seq) }()
	require.Eventually(t, func() bool { return journalfile.Holding(j) }, time.Minute, time.Millisecond)
	lost := errors.New("the lease was lost")
	j.Fence(lost)
	require.ErrorIs(t, <-synced, lost)
	require.ErrorIs(t, j.Close(), lost)
	assert.Zero(t, journalfile.CommitCount(j))
}
