package journalfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"time"

	fastjson "github.com/goccy/go-json"
	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/crw-dev/crw/journal"
)

// lockTimeout bounds how long an open waits for another handle's lock before
// giving up with ErrLocked, rather than blocking forever. Readers hold the lock
// for the few milliseconds a read takes, so a writer waiting this long never
// fails because a status command happened to be reading.
const lockTimeout = 2 * time.Second

// boltOptions are the options of every open. NoSync stays off: a commit is
// durable when it returns. The freelist is rebuilt at open instead of being
// written on every commit, which keeps appends to the pages that changed.
func boltOptions(readOnly bool, openFile func(string, int, os.FileMode) (*os.File, error)) *bbolt.Options {
	return &bbolt.Options{
		Timeout:        lockTimeout,
		ReadOnly:       readOnly,
		FreelistType:   bbolt.FreelistMapType,
		NoFreelistSync: true,
		OpenFile:       openFile,
	}
}

// fileState is what a successful check learned about a journal.
type fileState struct {
	runID   string
	last    uint64
	summed  bool             // rows end in a checksum (keyFormat)
	summary *journal.Summary // nil for a journal written before summaries were kept
}

// openChecked opens path read-only and proves it is an undamaged journal
// before anything may write to it. bbolt writes to a file it is asked to open
// read-write (it formats an empty one), so a damaged file must never get
// that far. The returned db is read-only; info identifies the file checked.
func openChecked(path string) (db *bbolt.DB, st fileState, info os.FileInfo, err error) {
	// A zero-length file would be formatted by a read-write open and is
	// refused by a read-only one with an unhelpful error: name it here.
	pre, err := os.Stat(path)
	if err != nil {
		return nil, st, nil, fmt.Errorf("journal: open %s: %w", path, err)
	}
	if !pre.Mode().IsRegular() {
		return nil, st, nil, fmt.Errorf("journal: open %s: not a regular file", path)
	}
	if pre.Size() == 0 {
		return nil, st, nil, fmt.Errorf("journal: open %s: %w: empty file", path, ErrCorrupt)
	}

	var f *os.File
	capture := func(name string, flag int, perm os.FileMode) (*os.File, error) {
		var err error
		f, err = os.OpenFile(name, flag, perm)
		return f, err
	}
	db, err = bbolt.Open(path, 0o600, boltOptions(true, capture))
	if err != nil {
		return nil, st, nil, openError(path, err)
	}
	info, err = f.Stat()
	if err == nil {
		st, err = checkDB(db, info.Size())
	}
	if err != nil {
		_ = db.Close()
		return nil, st, nil, fmt.Errorf("journal: open %s: %w", path, err)
	}
	return db, st, info, nil
}

// openError classifies an error from bbolt.Open. Failing to open or lock the
// file keeps its cause; anything bbolt says after reading the file (bad
// magic, checksum, version, too small to hold its meta pages) means damage.
func openError(path string, err error) error {
	var pathErr *fs.PathError
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("journal: open %s: %w", path, ErrLocked)
	case errors.As(err, &pathErr):
		return fmt.Errorf("journal: open %s: %w", path, err)
	default:
		return fmt.Errorf("journal: open %s: %w: %w", path, ErrCorrupt, err)
	}
}

// checkDB verifies a read-only db: the file holds every page its meta names,
// bbolt's consistency check passes, the schema is ours and the rows keys run
// 1..last without a gap. Damage comes back wrapping ErrCorrupt.
func checkDB(db *bbolt.DB, fileSize int64) (st fileState, err error) {
	// Page reads go through the mmap; on a damaged file they can fault or
	// trip bbolt's assertions. Turn both into ErrCorrupt instead of a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrCorrupt, r)
		}
	}()
	err = db.View(func(tx *bbolt.Tx) error {
		// A truncated file maps pages past its end, and touching them raises
		// SIGBUS; so compare sizes before reading any page but the metas.
		if fileSize < tx.Size() {
			return fmt.Errorf("%w: file has %d bytes but its pages need %d (truncated)", ErrCorrupt, fileSize, tx.Size())
		}
		// bbolt walks the tree on goroutines of its own (the freelist scan
		// that NoFreelistSync implies has no recover), where a bad page
		// kills the process. Walk it here first, where it cannot.
		if err := tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			return walk(b)
		}); err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if err := consistency(tx); err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		var err error
		st, err = readMeta(tx)
		return err
	})
	return st, err
}

// walk visits every page and key of b and the buckets under it, checking
// that keys ascend.
func walk(b *bbolt.Bucket) error {
	c := b.Cursor()
	var prev []byte
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return fmt.Errorf("key %x after %x", k, prev)
		}
		prev = k
		if v == nil {
			if child := b.Bucket(k); child != nil {
				if err := walk(child); err != nil {
					return fmt.Errorf("bucket %q: %w", k, err)
				}
			}
		}
	}
	return nil
}

// consistency runs tx.Check to the end and returns its first finding. The
// channel is drained fully so the checking goroutine can finish.
func consistency(tx *bbolt.Tx) error {
	var first error
	n := 0
	for err := range tx.Check() {
		if first == nil {
			first = err
		}
		n++
	}
	if n > 1 {
		return fmt.Errorf("%w (and %d more findings)", first, n-1)
	}
	return first
}

// readMeta checks the schema, run id and row format and walks the rows, whose keys must
// be 1, 2, … without a gap (later seqs are assigned from the last one) and
// whose values must be JSON, with the checksum the format gives them.
func readMeta(tx *bbolt.Tx) (fileState, error) {
	var st fileState
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return st, fmt.Errorf("%w: no %q bucket, not a crw journal", ErrSchema, bucketMeta)
	}
	if got := string(meta.Get(keySchema)); got != Schema {
		return st, fmt.Errorf("%w: %q, want %q", ErrSchema, got, Schema)
	}
	st.runID = string(meta.Get(keyRun))
	switch f := meta.Get(keyFormat); {
	case f == nil:
		// Written before rows had a checksum: read as it is, and kept so when appended to.
	case string(f) == formatSummed:
		st.summed = true
	default:
		return st, fmt.Errorf("%w: row format %q, want %q", ErrSchema, f, formatSummed)
	}
	if st.runID == "" {
		return st, fmt.Errorf("%w: no run id in %q", ErrCorrupt, bucketMeta)
	}
	rows := tx.Bucket(bucketRows)
	if rows == nil {
		return st, fmt.Errorf("%w: no %q bucket", ErrCorrupt, bucketRows)
	}
	c := rows.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		seq, ok := parseSeqKey(k)
		if !ok || seq != st.last+1 {
			return st, fmt.Errorf("%w: rows key %x follows seq %d", ErrCorrupt, k, st.last)
		}
		// bbolt keeps no checksum of values: a row's own checksum finds damage inside it,
		// and in a journal written before rows had one, only JSON that no longer parses does.
		data, err := rowJSON(st.summed, seq, v)
		if err != nil {
			return st, err
		}
		if !fastjson.Valid(data) {
			return st, fmt.Errorf("%w: row %d is not valid JSON", ErrCorrupt, seq)
		}
		st.last = seq
	}
	sum, err := summaryOf(tx, st.last)
	switch {
	case errors.Is(err, errNoSummary):
	case err != nil:
		return st, err
	default:
		st.summary = sum
	}
	return st, nil
}

// lastSeq reads the highest seq without walking the rows: a cheap re-check
// after the read-write open that follows a full check.
func lastSeq(tx *bbolt.Tx) (uint64, error) {
	rows := tx.Bucket(bucketRows)
	if rows == nil {
		return 0, fmt.Errorf("%w: no %q bucket", ErrCorrupt, bucketRows)
	}
	k, _ := rows.Cursor().Last()
	if k == nil {
		return 0, nil
	}
	seq, ok := parseSeqKey(k)
	if !ok {
		return 0, fmt.Errorf("%w: rows key %x is not a seq", ErrCorrupt, k)
	}
	return seq, nil
}
