package journalfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/crw-dev/crw/journal"
)

// The summary. Every commit folds its rows into the journal.Summary kept under meta/summary and
// rewrites it in the same transaction, so it covers exactly the rows the file holds, whenever
// the process dies. The fold's call states live in the calls bucket, on disk: the writer keeps
// nothing per call in memory. Reading the summary touches a few pages, never the rows.

// ErrNoSummary: a journal written before summaries were kept; its summary is made when it is
// next opened for writing, and until then only by reading its rows.
var ErrNoSummary = errors.New("journal has no summary")

// errNoSummary is ErrNoSummary inside this package's transactions.
var errNoSummary = ErrNoSummary

// callOpen is a call's state while its newest attempt has no terminal row.
const callOpen = "open"

// callStates keeps the fold's call states in the calls bucket.
type callStates struct{ b *bbolt.Bucket }

func (c callStates) CallState(call string) (bool, journal.CallStatus, error) {
	v := c.b.Get([]byte(call))
	switch {
	case v == nil:
		return false, "", nil
	case string(v) == callOpen:
		return true, "", nil
	}
	return true, journal.CallStatus(v), nil
}

func (c callStates) SetCallState(call string, status journal.CallStatus) error {
	v := string(status)
	if v == "" {
		v = callOpen
	}
	if err := c.b.Put([]byte(call), []byte(v)); err != nil {
		return fmt.Errorf("summary: call %.64q: %w", call, err)
	}
	return nil
}

func putSummary(meta *bbolt.Bucket, sum *journal.Summary) error {
	data, err := json.Marshal(sum)
	if err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	return meta.Put(keySummary, data)
}

// foldSummary folds a batch into sum and stores it, within the batch's transaction.
func foldSummary(tx *bbolt.Tx, sum *journal.Summary, batch []entry) error {
	meta, calls := tx.Bucket(bucketMeta), tx.Bucket(bucketCalls)
	if meta == nil || calls == nil {
		return fmt.Errorf("%w: no %q or %q bucket", ErrCorrupt, bucketMeta, bucketCalls)
	}
	for i := range batch {
		if err := sum.Add(batch[i].part, callStates{calls}); err != nil {
			return err
		}
	}
	return putSummary(meta, sum)
}

// summaryOf reads the stored summary and checks that it covers the rows up to last.
func summaryOf(tx *bbolt.Tx, last uint64) (*journal.Summary, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return nil, fmt.Errorf("%w: no %q bucket", ErrSchema, bucketMeta)
	}
	data := meta.Get(keySummary)
	if data == nil {
		return nil, errNoSummary
	}
	sum := journal.NewSummary()
	if err := json.Unmarshal(data, sum); err != nil {
		return nil, fmt.Errorf("%w: the summary does not read: %v", ErrCorrupt, err)
	}
	if sum.Calls == nil {
		sum.Calls = map[journal.CallStatus]int{}
	}
	if sum.LastSeq != last {
		return nil, fmt.Errorf("%w: the summary covers the rows to %d but the rows end at %d", ErrCorrupt, sum.LastSeq, last)
	}
	if tx.Bucket(bucketCalls) == nil {
		return nil, fmt.Errorf("%w: a summary without its %q bucket", ErrCorrupt, bucketCalls)
	}
	return sum, nil
}

// rebuildSummary folds every row again into a new summary and its call states, and stores
// both, within tx (a write transaction).
func rebuildSummary(tx *bbolt.Tx) (*journal.Summary, error) {
	if tx.Bucket(bucketCalls) != nil {
		if err := tx.DeleteBucket(bucketCalls); err != nil {
			return nil, err
		}
	}
	calls, err := tx.CreateBucket(bucketCalls)
	if err != nil {
		return nil, err
	}
	sum := journal.NewSummary()
	summed := string(tx.Bucket(bucketMeta).Get(keyFormat)) == formatSummed
	err = eachRow(tx, 1, func(seq uint64, v []byte) (bool, error) {
		data, err := rowJSON(summed, seq, v)
		if err != nil {
			return false, err
		}
		var r journal.Row
		if err := json.Unmarshal(data, &r); err != nil {
			return false, fmt.Errorf("%w: row %d: %w", ErrCorrupt, seq, err)
		}
		part := r.ForSummary()
		part.Seq = seq
		return true, sum.Add(part, callStates{calls})
	})
	if err != nil {
		return nil, err
	}
	return sum, putSummary(tx.Bucket(bucketMeta), sum)
}

// Summary returns the summary of the durable rows. A read-only handle on a journal written
// before summaries were kept reads its rows for it.
func (j *Journal) Summary() (*journal.Summary, error) {
	j.mu.Lock()
	closed, sum := j.closed, j.summary
	if sum != nil {
		sum = sum.Clone()
	}
	j.mu.Unlock()
	switch {
	case closed:
		return nil, fmt.Errorf("journal: summary: %w", ErrClosed)
	case sum != nil:
		return sum, nil
	}
	return journal.Summarize(func(fn func(*journal.Row) error) error { return j.Scan(1, fn) })
}

// readerLockWait is how long ReadSummary waits for the file's lock: a writer holds it for as
// long as it holds the run, so a reader that finds it taken asks the writer instead.
const readerLockWait = 50 * time.Millisecond

// ReadSummary reads a journal's summary and run id without reading its rows, nor checking them:
// what status and list show. A file whose pages, meta bucket or summary do not read is
// ErrCorrupt; a journal without a summary ErrNoSummary; one another handle holds ErrLocked.
func ReadSummary(path string) (sum *journal.Summary, runID string, err error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, "", fmt.Errorf("journal: summary %s: %w", path, err)
	}
	if !info.Mode().IsRegular() || info.Size() == 0 {
		return nil, "", fmt.Errorf("journal: summary %s: %w: empty or not a regular file", path, ErrCorrupt)
	}
	opts := boltOptions(true, nil)
	opts.Timeout = readerLockWait
	db, err := bbolt.Open(path, 0o600, opts)
	if err != nil {
		return nil, "", openError(path, err)
	}
	defer db.Close()
	err = func() (err error) {
		// Only a few pages are read, but a damaged file may fault on them: say so, not crash.
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%w: %v", ErrCorrupt, r)
			}
		}()
		return db.View(func(tx *bbolt.Tx) error {
			if info.Size() < tx.Size() {
				return fmt.Errorf("%w: file has %d bytes but its pages need %d (truncated)", ErrCorrupt, info.Size(), tx.Size())
			}
			meta := tx.Bucket(bucketMeta)
			if meta == nil || string(meta.Get(keySchema)) != Schema {
				return fmt.Errorf("%w: not a %s journal", ErrSchema, Schema)
			}
			runID = string(meta.Get(keyRun))
			last, err := lastSeq(tx)
			if err != nil {
				return err
			}
			sum, err = summaryOf(tx, last)
			return err
		})
	}()
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		err = ErrClosed
	}
	if err != nil {
		return nil, "", fmt.Errorf("journal: summary %s: %w", path, err)
	}
	return sum, runID, nil
}
