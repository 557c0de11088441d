package local_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
	"github.com/crw-dev/crw/store/local/journalfile/rowlog"
	"github.com/crw-dev/crw/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) (store.Store, store.Store) {
			// A deep folder: its sockets' paths are longer than a unix socket's name may be.
			root := filepath.Join(t.TempDir(), strings.Repeat("state-folder-", 6))
			s, err := local.New(root)
			require.NoError(t, err)
			other, err := local.New(root)
			require.NoError(t, err)
			return s, other
		},
		// A lease is lost when the run's lock file is replaced behind its holder's back.
		Revoke: func(t *testing.T, s store.Store, run string) {
			dir := s.(*local.Store).RunDir(run)
			fresh := filepath.Join(dir, "run.lock.new")
			require.NoError(t, os.WriteFile(fresh, nil, 0o600))
			require.NoError(t, os.Rename(fresh, filepath.Join(dir, local.RunLockFile)))
		},
	})
}

// A byte changed inside a row's content is found by a reader, whether the run's holder serves
// the rows or they are read from the file: the error names the run, the file and the row.
func TestDamagedRowIsReported(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := local.New(root)
	require.NoError(t, err)
	reader, err := local.New(root)
	require.NoError(t, err)
	run := storetest.ID(7)
	require.NoError(t, s.Create(ctx, storetest.Spec(run)))
	lease, err := s.Acquire(ctx, run)
	require.NoError(t, err)
	_, err = lease.Journal().Write(
		&journal.Row{Type: journal.TypeWarning, Reason: "first-words"},
		&journal.Row{Type: journal.TypeWarning, Reason: "second-words"},
		&journal.Row{Type: journal.TypeWarning, Reason: "third-words"},
	)
	require.NoError(t, err)
	path := filepath.Join(s.RunDir(run), local.JournalFile)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, 1, bytes.Count(data, []byte("second-words")))
	require.NoError(t, os.WriteFile(path, bytes.Replace(data, []byte("second-words"), []byte("secont-words"), 1), 0o600))

	check := func(how string) {
		t.Helper()
		err := reader.Rows(ctx, run, 1, func(*journal.Row) error { return nil })
		require.Error(t, err, how)
		e, ok := errs.As(err)
		require.True(t, ok, how)
		assert.Equal(t, errs.IncompatibleSchema, e.Code, how)
		assert.Equal(t, "journal_damaged", e.Reason(), how)
		assert.Contains(t, e.Detail, "run "+run+": the journal "+path+" is damaged and was left as it is: row 2: checksum mismatch", how)
	}
	check("served by the holder")
	require.NoError(t, lease.Release())
	check("read from the file")
	_, err = s.Acquire(ctx, run)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "row 2: checksum mismatch")
}

// TestCreateIsWholeOrNothing: a run's folder appears only with its spec and journal in it; the
// ".creating-" folder a killed create leaves is not a run, and the next create removes it once
// it is an hour old.
func TestCreateIsWholeOrNothing(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := local.New(root)
	require.NoError(t, err)
	flow := filepath.Join(root, "flow")
	require.NoError(t, os.MkdirAll(flow, 0o700))
	stale := filepath.Join(flow, ".creating-"+storetest.ID(1)+"-dead")
	fresh := filepath.Join(flow, ".creating-"+storetest.ID(2)+"-busy")
	for _, dir := range []string{stale, fresh} {
		require.NoError(t, os.Mkdir(dir, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, local.JournalFile), nil, 0o600))
	}
	old := time.Now().Add(-2 * time.Hour)
	require.NoError(t, os.Chtimes(stale, old, old))

	runs, err := s.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, runs, "a folder being created is not a run")

	run := storetest.ID(3)
	require.NoError(t, s.Create(ctx, storetest.Spec(run)))
	entries, err := os.ReadDir(flow)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{run, filepath.Base(fresh)}, names, "the stale folder is removed, the fresh one left to its process")
	assert.FileExists(t, filepath.Join(s.RunDir(run), local.SpecFile))
	assert.FileExists(t, filepath.Join(s.RunDir(run), local.JournalFile))
	err = s.Create(ctx, storetest.Spec(run))
	assert.ErrorIs(t, err, store.ErrExists)
}

// TestAProcessLockThatCannotBeTakenDoesNotRefuseTheRun (seed 003): the process holds the run
// without one; its token is empty, so its started row names no process, and it says why.
func TestAProcessLockThatCannotBeTakenDoesNotRefuseTheRun(t *testing.T) {
	ctx := context.Background()
	s, run := createdRun(t)
	local.FailProcessLocks(t)

	lease, err := s.Acquire(ctx, run)
	require.NoError(t, err, "the run is held without a process lock")
	assert.Empty(t, lease.Token(), "no process lock: the started row names no process")
	w, ok := lease.(store.ProcessLockWarner)
	require.True(t, ok)
	require.Error(t, w.ProcessLockError())
	assert.Contains(t, w.ProcessLockError().Error(), "no room for a process lock")
	assert.Empty(t, local.ProcessLocks(s.Root(), run))
	assert.True(t, local.Held(s.Root(), run), "the run lock is held")
	_, err = s.Acquire(ctx, run)
	assert.ErrorIs(t, err, store.ErrHeld, "a second process is still refused by the run lock")
	require.NoError(t, lease.Release())
	assert.False(t, local.Held(s.Root(), run))
}

// TestTheNextHolderRemovesTheProcessLocksOfDeadProcesses: a process killed leaves its process
// lock; the run's next holder removes those no process holds that are older than a moment,
// and keeps one a live process holds and one just made (its process locks it next).
func TestTheNextHolderRemovesTheProcessLocksOfDeadProcesses(t *testing.T) {
	ctx := context.Background()
	s, run := createdRun(t)
	dir := s.RunDir(run)
	old := time.Now().Add(-2 * time.Minute)
	for _, token := range []string{"dead1", "dead2", "alive", "fresh"} {
		path := filepath.Join(dir, "process."+token+".lock")
		require.NoError(t, os.WriteFile(path, []byte("1\n"), 0o600))
		if token != "fresh" {
			require.NoError(t, os.Chtimes(path, old, old))
		}
	}
	alive, err := os.Open(filepath.Join(dir, "process.alive.lock"))
	require.NoError(t, err)
	defer alive.Close()
	require.NoError(t, syscall.Flock(int(alive.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))

	lease, err := s.Acquire(ctx, run)
	require.NoError(t, err)
	defer lease.Release()
	var left []string
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "process.") {
			left = append(left, e.Name())
		}
	}
	assert.ElementsMatch(t, []string{"process.alive.lock", "process.fresh.lock", "process." + lease.Token() + ".lock"}, left)
}

// TestADeleteThatDiedPartWayIsFinished: a delete (or prune) killed after it renamed a run's
// folder away leaves .deleted-<run>-<token> in flow/, which no run owns; the next list
// removes it, and so does the next delete.
func TestADeleteThatDiedPartWayIsFinished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	s, err := local.New(root)
	require.NoError(t, err)
	left := func(name string) string {
		dir := filepath.Join(root, "flow", name)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "worktrees", "c1-g1"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "journal.db"), []byte("x"), 0o600))
		return dir
	}
	a, b := "20260101-000000-aaaaaa", "20260101-000000-bbbbbb"
	require.NoError(t, s.Create(ctx, storetest.Spec(a)))
	require.NoError(t, s.Create(ctx, storetest.Spec(b)))

	dead := left(".deleted-20251231-000000-cccccc-0123456789ab")
	ids, err := s.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{a, b}, ids)
	assert.NoDirExists(t, dead, "the list finished the dead delete")

	dead = left(".deleted-20251231-000000-dddddd-0123456789ab")
	require.NoError(t, s.Delete(ctx, a, nil))
	assert.NoDirExists(t, dead, "the next delete finished it")
	entries, err := os.ReadDir(filepath.Join(root, "flow"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{b}, names)
}

// TestFilesNoRunNamesAreCollected: the workflow files (by digest) a deleted run named are
// removed once no run names them and they were put over the grace ago; a file a live run
// names stays, and so does one put just now (a run being created puts its files first), or
// put long ago and put again just now.
func TestFilesNoRunNamesAreCollected(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	s, err := local.New(root)
	require.NoError(t, err)
	put := func(text string, age time.Duration) string {
		digest, err := s.PutFile(ctx, []byte(text))
		require.NoError(t, err)
		old := time.Now().Add(-age)
		require.NoError(t, os.Chtimes(filepath.Join(root, "files", "sha256-"+strings.TrimPrefix(digest, "sha256:")), old, old))
		return digest
	}
	kept := put("export default () => 1", time.Hour)
	orphan := put("export default () => 2", time.Hour)
	fresh := put("export default () => 3", 0)
	again := put("export default () => 4", time.Hour)
	_, err = s.PutFile(ctx, []byte("export default () => 4"))
	require.NoError(t, err)
	spec := storetest.Spec("20260101-000000-aaaaaa")
	spec.Files = map[string]string{"/w/wf.js": kept}
	require.NoError(t, s.Create(ctx, spec))

	removed, err := s.CollectFiles(ctx, 10*time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 1, removed)
	for digest, want := range map[string]bool{kept: true, orphan: false, fresh: true, again: true} {
		_, err := s.File(ctx, digest)
		assert.Equal(t, want, err == nil, "%s: %v", digest, err)
	}
}

// A page of rows is the rows from its first seq on, at most its limit of them, whether the
// run's holder serves them or they are read from the file; a page past the last row is empty.
func TestRowsPageReadsAPage(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := local.New(root)
	require.NoError(t, err)
	reader, err := local.New(root)
	require.NoError(t, err)
	run := storetest.ID(8)
	require.NoError(t, s.Create(ctx, storetest.Spec(run)))
	lease, err := s.Acquire(ctx, run)
	require.NoError(t, err)
	var rows []*journal.Row
	for i := range 3000 {
		rows = append(rows, &journal.Row{Type: journal.TypeWarning, Reason: fmt.Sprintf("w%d", i+1)})
	}
	last, err := lease.Journal().Write(rows...)
	require.NoError(t, err)
	require.NoError(t, lease.Journal().Sync(last))

	page := func(from uint64, limit int) []string {
		t.Helper()
		var got []string
		require.NoError(t, reader.RowsPage(ctx, run, from, limit, func(r *journal.Row) error {
			got = append(got, fmt.Sprintf("%d:%s", r.Seq, r.Reason))
			return nil
		}))
		return got
	}
	check := func(how string) {
		t.Helper()
		assert.Equal(t, []string{"5:w5", "6:w6", "7:w7"}, page(5, 3), how)
		got := page(1000, 1500) // more than one chunk of the file
		require.Len(t, got, 1500, how)
		assert.Equal(t, []string{"1000:w1000", "2499:w2499"}, []string{got[0], got[1499]}, how)
		assert.Len(t, page(2990, 100), 11, "%s: a page cut at the last row", how)
		assert.Len(t, page(1, 0), 3000, "%s: no limit", how)
		assert.Empty(t, page(3001, 10), how)
		stop := errors.New("stop")
		n := 0
		err := reader.RowsPage(ctx, run, 1, 10, func(*journal.Row) error {
			if n++; n == 4 {
				return stop
			}
			return nil
		})
		assert.ErrorIs(t, err, stop, "%s: fn's error is returned as is", how)
	}
	check("held")
	require.NoError(t, lease.Release())
	check("from the file")
}

// TestAcquireReadingReadsBeforeTheOpenToWrite: AcquireReading gives its read the run's journal,
// read-only, and then holds the run with the journal open to write; an error of read's is
// AcquireReading's, as it is, and the run is let go.
func TestAcquireReadingReadsBeforeTheOpenToWrite(t *testing.T) {
	ctx := context.Background()
	s, run := createdRun(t)
	lease, err := s.Acquire(ctx, run)
	require.NoError(t, err)
	_, err = lease.Journal().Write(&journal.Row{Type: journal.TypeStarted, Run: run}, &journal.Row{Type: journal.TypeWarning, Reason: "first"})
	require.NoError(t, err)
	require.NoError(t, lease.Release())

	var types []string
	lease, err = s.AcquireReading(ctx, run, func(j store.Journal) error {
		assert.True(t, local.Held(s.Root(), run), "read while the run is held")
		assert.Equal(t, uint64(0), j.Append(&journal.Row{Type: journal.TypeWarning}), "the journal read is given is read-only")
		return j.Each(1, 0, func(r *journal.Row) error {
			types = append(types, r.Type)
			return nil
		})
	})
	require.NoError(t, err)
	assert.Equal(t, []string{journal.TypeStarted, journal.TypeWarning}, types)
	seq, err := lease.Journal().Write(&journal.Row{Type: journal.TypeWarning, Reason: "second"})
	require.NoError(t, err)
	assert.Equal(t, uint64(3), seq, "the lease's journal writes after what was read")
	require.NoError(t, lease.Release())

	refused := errors.New("refused by read")
	_, err = s.AcquireReading(ctx, run, func(store.Journal) error { return refused })
	assert.Equal(t, refused, err, "read's error, as it is")
	assert.False(t, local.Held(s.Root(), run), "and the run let go")
	lease, err = s.Acquire(ctx, run)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), lease.Journal().(interface{ LastSeq() uint64 }).LastSeq())
	require.NoError(t, lease.Release())
}

// createdRun is a store in a folder of its own and a run created in it.
func createdRun(t *testing.T) (*local.Store, string) {
	t.Helper()
	s, err := local.New(t.TempDir())
	require.NoError(t, err)
	run := storetest.ID(1)
	require.NoError(t, s.Create(context.Background(), storetest.Spec(run)))
	return s, run
}

// TestALargeJournalIsReadOnceTheLeaseServesItsReaders: AcquireReading reads a journal too large
// to stay mapped in once the lease serves its readers (another process reads the run's rows
// through it meanwhile), and one small enough before, on the file just checked; either way an
// error of read's lets the run go.
func TestALargeJournalIsReadOnceTheLeaseServesItsReaders(t *testing.T) {
	ctx := context.Background()
	s, run := createdRun(t)
	lease, err := s.Acquire(ctx, run)
	require.NoError(t, err)
	_, err = lease.Journal().Write(&journal.Row{Type: journal.TypeStarted, Run: run})
	require.NoError(t, err)
	require.NoError(t, lease.Release())
	socket := filepath.Join(s.RunDir(run), local.ControlSocket)

	lease, err = s.AcquireReading(ctx, run, func(store.Journal) error {
		_, err := os.Stat(socket)
		assert.ErrorIs(t, err, os.ErrNotExist, "a small journal is read before the lease serves its readers")
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, lease.Release())

	local.ReadAfterTheLease(t)
	reader, err := local.New(s.Root())
	require.NoError(t, err)
	lease, err = s.AcquireReading(ctx, run, func(j store.Journal) error {
		var seen []string
		require.NoError(t, reader.Rows(ctx, run, 1, func(r *journal.Row) error {
			seen = append(seen, r.Type)
			return nil
		}), "another reader reads the run through its holder while it reads")
		assert.Equal(t, []string{journal.TypeStarted}, seen)
		return j.Each(1, 0, func(*journal.Row) error { return nil })
	})
	require.NoError(t, err)
	require.NoError(t, lease.Release())

	refused := errors.New("refused by read")
	_, err = s.AcquireReading(ctx, run, func(store.Journal) error { return refused })
	assert.Equal(t, refused, err)
	assert.False(t, local.Held(s.Root(), run), "the run let go")
}

func TestTheJournalLogIsNamedAsTheJournalFileSays(t *testing.T) {
	assert.Equal(t, rowlog.Path(local.JournalFile), local.JournalLog)
}

// A run whose process died as the machine went down is not read from a journal file that may be
// torn: its readers say so, naming the resume, and the resume's open recovers it from its log.
func TestAJournalTheMachinesRestartMayHaveTornWaitsForItsResume(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := local.New(root)
	require.NoError(t, err)
	run := storetest.ID(9)
	require.NoError(t, s.Create(ctx, storetest.Spec(run)))
	s.CrashAfterCommit(run, 2)
	lease, err := s.Acquire(ctx, run)
	require.NoError(t, err)
	for _, reason := range []string{"first", "second", "third"} {
		_, _ = lease.Journal().Write(&journal.Row{Type: journal.TypeWarning, Reason: reason})
	}
	<-lease.Lost()
	_ = lease.Release()

	saved := rowlog.BootIDFile
	t.Cleanup(func() { rowlog.BootIDFile = saved })
	rowlog.BootIDFile = filepath.Join(t.TempDir(), "boot_id")
	require.NoError(t, os.WriteFile(rowlog.BootIDFile, []byte("after-the-restart\n"), 0o600))

	reader, err := local.New(root)
	require.NoError(t, err)
	for what, read := range map[string]func() error{
		"summary": func() error { _, err := reader.Summary(ctx, run); return err },
		"rows":    func() error { return reader.Rows(ctx, run, 1, func(*journal.Row) error { return nil }) },
	} {
		err := read()
		e, ok := errs.As(err)
		require.True(t, ok, "%s: %v", what, err)
		assert.Equal(t, errs.RunUnavailable, e.Code, what)
		assert.Equal(t, "journal_unrecovered", e.Reason(), what)
		assert.Contains(t, e.Detail, "run "+run+": the machine restarted while its journal was being written", what)
	}

	lease, err = s.Acquire(ctx, run)
	require.NoError(t, err)
	require.NoError(t, lease.Release())
	sum, err := reader.Summary(ctx, run)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), sum.LastSeq, "the rows of the two commits made")
}
