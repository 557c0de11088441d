package journalfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"go.etcd.io/bbolt"

	"github.com/crw-dev/crw/store/local/journalfile/rowlog"
)

// A journal of formatLogged has a log beside its bbolt file (rowlog): a commit puts its rows in
// the bbolt file without an fsync, then appends them to the log and fsyncs that file alone.
// Readers read the bbolt file as before, unless it may be torn (forReader). The writer's open
// recovers it from the log first: a file a machine's crash may have torn (its commits were not
// fsync'd, and the machine restarted since) is made again from the log, rows the log holds and
// the file lacks are put in it, and rows the file holds and the log lacks are logged.

// openLog opens the log of the journal at path to write, once its file is known safe to check:
// made again from the log if the machine restarted since rows were put in it unsynced (rebuilt). A journal
// without a log (written before logs were kept) gives nil. run, if not "", is the run the
// journal must be: a log of another is refused before anything is made of it. The file itself
// is not read before it is made again (a torn file may hold anything, a cycle of pages that
// bbolt would follow until its stack ran out among them); the one replaced is kept.
func openLog(path, run string) (lg *rowlog.Log, st rowlog.State, rebuilt bool, err error) {
	logPath := rowlog.Path(path)
	if _, err := os.Lstat(logPath); errors.Is(err, fs.ErrNotExist) {
		return nil, rowlog.State{}, false, nil
	}
	lg, st, err = rowlog.Open(logPath, nil)
	if err != nil {
		return nil, st, false, logError(path, err)
	}
	if run != "" && st.Run != run {
		_ = lg.Close()
		return nil, st, false, fmt.Errorf("journal: open %s: %w: its log is run %s's", path, ErrCorrupt, st.Run)
	}
	if !st.Synced(rowlog.BootID()) {
		err := rebuild(path, lg, st)
		if err == nil {
			err = rebuildStep(path, RebuildRenamed)
		}
		if err == nil {
			// The file made again is fsync'd with every row of the log: the log says so at
			// once, for readers and for the next open, whatever becomes of this one (a resume
			// of a run that has ended reads the file and goes no further, the log left as it
			// is: without this, readers would wait for a recovery no command makes).
			err = lg.Checkpoint(st.Last)
		}
		if err != nil {
			_ = lg.Close()
			return nil, st, false, fmt.Errorf("journal: open %s: make it again from its log: %w", path, err)
		}
		st.Checkpoint, st.Closed, rebuilt = st.Last, true, true
	}
	return lg, st, rebuilt, nil
}

// Steps of a rebuild at which FailNextRebuild stops it.
const (
	RebuildKept    = "kept"    // the torn file kept, before the rename
	RebuildRenamed = "renamed" // the file made renamed in place, before the log's checkpoint
)

// FailNextRebuild makes the next rebuild of the journal at path stop at step, as its process
// killed there would: what it did so far stays, and the open fails. It is the simulator's
// fault (engine/sim, through store/local), and the tests'.
func FailNextRebuild(path, step string) {
	rebuildFaults.Lock()
	defer rebuildFaults.Unlock()
	if rebuildFaults.at == nil {
		rebuildFaults.at = map[string]string{}
	}
	rebuildFaults.at[path] = step
}

var rebuildFaults struct {
	sync.Mutex
	at map[string]string // the step by journal path
}

// rebuildStep is where FailNextRebuild stops the rebuild of the journal at path.
func rebuildStep(path, step string) error {
	rebuildFaults.Lock()
	defer rebuildFaults.Unlock()
	if rebuildFaults.at[path] != step {
		return nil
	}
	delete(rebuildFaults.at, path)
	return fmt.Errorf("the rebuild was stopped at its step %q (FailNextRebuild)", step)
}

// logError maps the log's errors onto the journal's.
func logError(path string, err error) error {
	switch {
	case errors.Is(err, rowlog.ErrLocked):
		return fmt.Errorf("journal: open %s: %w: %w", path, ErrLocked, err)
	case errors.Is(err, rowlog.ErrCorrupt):
		return fmt.Errorf("journal: open %s: %w: %w", path, ErrCorrupt, err)
	case errors.Is(err, rowlog.ErrFormat):
		return fmt.Errorf("journal: open %s: %w: %w", path, ErrSchema, err)
	}
	return fmt.Errorf("journal: open %s: %w", path, err)
}

// matchLog checks the bbolt file's state st against its log's (nil: none).
func matchLog(path string, st fileState, lg *rowlog.Log, ls rowlog.State) error {
	switch {
	case st.logged && lg == nil:
		return fmt.Errorf("journal: open %s: %w: its log %s is missing", path, ErrCorrupt, rowlog.Path(path))
	case !st.logged && lg != nil:
		return fmt.Errorf("journal: open %s: %w: a log %s beside a journal that keeps none", path, ErrCorrupt, rowlog.Path(path))
	case lg == nil:
		return nil
	case ls.Run != st.runID:
		return fmt.Errorf("journal: open %s: %w: its log is run %s's", path, ErrCorrupt, ls.Run)
	}
	return nil
}

// logMissing logs the rows the file db holds past the log's last, fsync'd: a writer that died
// between its commit to the file and its log's fsync left them (rows nobody was told were
// durable, and so nobody acted on).
func logMissing(db *bbolt.DB, lg *rowlog.Log, logged, last uint64) error {
	if last <= logged {
		return nil
	}
	var rows [][]byte
	err := db.View(func(tx *bbolt.Tx) error {
		return eachRow(tx, logged+1, func(seq uint64, v []byte) (bool, error) {
			rows = append(rows, append([]byte(nil), v...))
			return seq < last, nil
		})
	})
	if err == nil && uint64(len(rows)) != last-logged {
		err = fmt.Errorf("%w: rows %d-%d are not all in the file", ErrCorrupt, logged+1, last)
	}
	if err == nil {
		err = lg.Append(logged+1, rows)
	}
	return err
}

// rebuild makes the bbolt file at path again from the rows of its log lg, whose state is st,
// under a temporary name renamed over it once fsync'd; the file it replaces is kept (keepTorn).
// What is at path must be a file, or nothing (a restart may leave none): a directory there is
// damage, which no rebuild would get past.
func rebuild(path string, lg *rowlog.Log, st rowlog.State) error {
	if info, err := os.Stat(path); err == nil && !info.Mode().IsRegular() {
		return fmt.Errorf("%w: empty or not a regular file", ErrCorrupt)
	}
	tmp := path + ".rebuilt"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s is in the way and cannot be taken away: %w", ErrCorrupt, tmp, err)
	}
	db, err := bbolt.Open(tmp, 0o600, boltOptions(false, nil))
	if err != nil {
		return err
	}
	db.NoSync = true
	err = db.Update(func(tx *bbolt.Tx) error { return formatFile(tx, st.Run, formatLogged) })
	if err == nil {
		err = applyLog(db, lg, 0)
	}
	if err == nil {
		err = db.Sync()
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		keepTorn(path, tornOf(st))
		err = rebuildStep(path, RebuildKept)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = SyncDir(filepath.Dir(path))
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// tornFrom is the file beside path.torn that says which writer left the file kept there: the
// boot id of its log's last boot frame, and the log's end then (tornOf). A rebuild killed after
// its rename and before the log's checkpoint is made again at the next open, from the same log:
// the file it replaces then is the one that rebuild made, and the torn original stays.
func tornFrom(path string) string { return path + ".torn.from" }

// tornOf says which writer left a file a rebuild from a log of state st replaces.
func tornOf(st rowlog.State) string { return fmt.Sprintf("boot %s, log end %d\n", st.Boot, st.End) }

// keepTorn keeps the file at path, which a rebuild replaces, as path.torn (the last one only),
// for whoever looks into why, unless path.torn is already the file that writer left (from).
// What it keeps is no part of the journal: a file it cannot keep is not kept.
func keepTorn(path, from string) {
	if f, err := os.OpenFile(tornFrom(path), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0); err == nil {
		var b [512]byte
		n, _ := f.Read(b[:])
		_ = f.Close()
		if string(b[:n]) == from {
			return
		}
	}
	if _, err := os.Stat(path); err != nil {
		return // none: the restart left no file
	}
	_ = os.Remove(path + ".torn")
	if os.Link(path, path+".torn") == nil {
		_ = rowlog.WriteOwnFile(tornFrom(path), []byte(from))
	}
}

// applyLog puts the log's rows after seq after in db, folded into the summary and its index as
// the commits that logged them would have; a transaction takes up to applyBatch rows (a file
// made again from a long log is one transaction per commit otherwise, and a crafted frame of
// many rows is not held whole).
func applyLog(db *bbolt.DB, lg *rowlog.Log, after uint64) error {
	var batch []entry
	put := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := db.Update(func(tx *bbolt.Tx) error {
			sum, err := summaryOf(tx, batch[0].seq-1)
			if err != nil {
				return err
			}
			if err := putRows(tx, batch); err != nil {
				return err
			}
			return foldSummary(tx, sum, batch)
		})
		batch = batch[:0]
		return err
	}
	err := lg.Each(func(first uint64, rows [][]byte) error {
		last := first + uint64(len(rows)) - 1
		if last <= after {
			return nil
		}
		if first <= after {
			return fmt.Errorf("%w: the log's commit of rows %d-%d straddles the file's end at %d", ErrCorrupt, first, last, after)
		}
		for i, v := range rows {
			seq := first + uint64(i)
			data, err := unseal(seq, v)
			if err != nil {
				return err
			}
			part, err := summaryPart(seq, data)
			if err != nil {
				return err
			}
			batch = append(batch, entry{seq: seq, data: append([]byte(nil), v...), part: part})
			if len(batch) >= applyBatch {
				if err := put(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return put()
}

// applyBatch is how many rows applyLog puts in one transaction.
const applyBatch = 4096

// applyTail puts the rows the log holds past seq after in the file at path, the very file
// checked (checked) and no other.
func applyTail(path string, checked os.FileInfo, lg *rowlog.Log, after uint64) error {
	db, err := bbolt.Open(path, 0o600, boltOptions(false, sameFile(checked)))
	if err != nil {
		return openError(path, err)
	}
	err = applyLog(db, lg, after)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("journal: open %s: put the rows its log holds: %w", path, err)
	}
	return nil
}

// sameFile is an OpenFile for bbolt that opens only the very file checked, never creating one:
// a file swapped in or emptied since the check is refused, not formatted.
func sameFile(checked os.FileInfo) func(string, int, os.FileMode) (*os.File, error) {
	return func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag&^os.O_CREATE, perm)
		if err != nil {
			return nil, err
		}
		if info, err := f.Stat(); err != nil || !os.SameFile(info, checked) || info.Size() == 0 {
			_ = f.Close()
			return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("file changed since it was checked")}
		}
		return f, nil
	}
}

// putRows puts a batch's rows, which must follow the file's last.
func putRows(tx *bbolt.Tx, batch []entry) error {
	b := tx.Bucket(bucketRows)
	if b == nil {
		return fmt.Errorf("%w: no %q bucket", ErrCorrupt, bucketRows)
	}
	// FillPercent is per transaction, so it is set on every commit.
	b.FillPercent = rowsFillPercent
	stored, err := lastSeq(tx)
	if err != nil {
		return err
	}
	// Our counter and the file must agree, or seqs the engine already holds would land on
	// the wrong rows.
	if first := batch[0].seq; first != stored+1 {
		return fmt.Errorf("first new row is %d but the file ends at %d", first, stored)
	}
	for _, e := range batch {
		if err := b.Put(seqKey(e.seq), e.data); err != nil {
			return fmt.Errorf("put row %d: %w", e.seq, err)
		}
	}
	return nil
}

// forReader runs read, a reader's reading of the journal's file at path (which no writer's
// open recovered), unless the file may be torn: a journal whose log its last writer did not
// close (its last bytes are not a checkpoint), opened to write last in another boot than the
// machine's (or in one no one can tell), is ErrUnrecovered, the file not read at all (a torn
// file may hold a cycle of pages bbolt would follow until its stack ran out). The last
// writer's boot is read from the log's boot file (rowlog.LastBoot), not from every frame.
func forReader(path string, read func() error) error {
	logPath := rowlog.Path(path)
	if _, err := os.Lstat(logPath); err != nil || rowlog.Closed(logPath) {
		return read()
	}
	last, err := rowlog.LastBoot(logPath)
	if err != nil {
		return logError(path, err)
	}
	if now := rowlog.BootID(); now == "" || last != now {
		return fmt.Errorf("%w: the machine restarted since its last writer opened it, and its file may be torn: the next open to write makes it again from its log", ErrUnrecovered)
	}
	return read()
}
