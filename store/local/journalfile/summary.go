package journalfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
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

// callStates keeps the fold's call states in the calls bucket, and the rest of its index in
// the open, unknown and verdicts buckets.
type callStates struct{ b, open, unknown, verdicts *bbolt.Bucket }

// indexOf is the index of tx's journal; ErrNoIndex when it has no index buckets (a journal
// written before they were kept).
func indexOf(tx *bbolt.Tx) (callStates, error) {
	c := callStates{tx.Bucket(bucketCalls), tx.Bucket(bucketOpen), tx.Bucket(bucketUnknown), tx.Bucket(bucketVerdicts)}
	if c.b == nil || c.open == nil || c.unknown == nil || c.verdicts == nil {
		return c, ErrNoIndex
	}
	return c, nil
}

// createIndex makes the index buckets of a new journal, or of one whose index is made again.
func createIndex(tx *bbolt.Tx) (callStates, error) {
	for _, name := range [][]byte{bucketCalls, bucketOpen, bucketUnknown, bucketVerdicts} {
		if tx.Bucket(name) != nil {
			if err := tx.DeleteBucket(name); err != nil {
				return callStates{}, err
			}
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return callStates{}, err
		}
	}
	return indexOf(tx)
}

func (c callStates) Open(call string) (*journal.OpenCall, error) {
	v := c.open.Get([]byte(call))
	if v == nil {
		return nil, nil
	}
	var o journal.OpenCall
	if err := json.Unmarshal(v, &o); err != nil {
		return nil, fmt.Errorf("%w: index: open call %.64q: %v", ErrCorrupt, call, err)
	}
	return &o, nil
}

func (c callStates) SetOpen(call string, o *journal.OpenCall) error {
	return putJSON(c.open, []byte(call), o)
}

func (c callStates) Unknown(call string) (*journal.UnknownCall, error) {
	v := c.unknown.Get([]byte(call))
	if v == nil {
		return nil, nil
	}
	var u journal.UnknownCall
	if err := json.Unmarshal(v, &u); err != nil {
		return nil, fmt.Errorf("%w: index: unknown call %.64q: %v", ErrCorrupt, call, err)
	}
	return &u, nil
}

func (c callStates) SetUnknown(call string, u *journal.UnknownCall) error {
	return putJSON(c.unknown, []byte(call), u)
}

func (c callStates) AddVerdict(v journal.Verdict) error {
	return putJSON(c.verdicts, seqKey(v.Seq), &v)
}

// putJSON puts v's JSON under key, or deletes key when v is nil.
func putJSON[T any](b *bbolt.Bucket, key []byte, v *T) error {
	if v == nil {
		return b.Delete(key)
	}
	data, err := journal.MarshalPlain(v)
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	if err := b.Put(key, data); err != nil {
		return fmt.Errorf("index: %.64q: %w", key, err)
	}
	return nil
}

// outstanding lists tx's index, each list cut at limit.
func outstanding(tx *bbolt.Tx, limit int) (*journal.Outstanding, error) {
	c, err := indexOf(tx)
	if err != nil {
		return nil, err
	}
	out := &journal.Outstanding{Open: []journal.OpenCall{}, Unknown: []journal.UnknownCall{}, Verdicts: []journal.Verdict{}}
	err = c.open.ForEach(func(k, v []byte) error {
		var o journal.OpenCall
		if err := json.Unmarshal(v, &o); err != nil {
			return fmt.Errorf("%w: index: open call %.64q: %v", ErrCorrupt, k, err)
		}
		out.Open = append(out.Open, o)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = c.unknown.ForEach(func(k, v []byte) error {
		var u journal.UnknownCall
		if err := json.Unmarshal(v, &u); err != nil {
			return fmt.Errorf("%w: index: unknown call %.64q: %v", ErrCorrupt, k, err)
		}
		if !u.Reconciled {
			out.Unknown = append(out.Unknown, u)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	n := 0
	err = c.verdicts.ForEach(func(k, v []byte) error {
		if n++; len(out.Verdicts) >= limit {
			return nil
		}
		var d journal.Verdict
		if err := json.Unmarshal(v, &d); err != nil {
			return fmt.Errorf("%w: index: verdict %x: %v", ErrCorrupt, k, err)
		}
		out.Verdicts = append(out.Verdicts, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out = out.Sorted(limit)
	out.TotalVerdicts = n
	last, err := lastSeq(tx)
	if err != nil {
		return nil, err
	}
	sum, err := summaryOf(tx, last)
	if err != nil {
		return nil, err
	}
	out.Commits = sum.Commits
	return out, nil
}

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
	// The bytes of a result, an error or a detail as the rows have them, <, > and & included.
	data, err := journal.MarshalPlain(sum)
	if err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	return meta.Put(keySummary, data)
}

// foldSummary folds a batch into sum and stores it, within the batch's transaction.
func foldSummary(tx *bbolt.Tx, sum *journal.Summary, batch []entry) error {
	meta := tx.Bucket(bucketMeta)
	disk, err := indexOf(tx)
	if meta == nil || err != nil {
		return fmt.Errorf("%w: no %q bucket or no index", ErrCorrupt, bucketMeta)
	}
	idx := stage(disk)
	for i := range batch {
		if err := sum.Add(batch[i].part, idx); err != nil {
			return err
		}
	}
	if err := idx.write(); err != nil {
		return err
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

// ErrNoIndex: a journal written before its index was kept (journal.Index beside the summary);
// the index is made when the journal is next opened for writing, and until then only by
// reading its rows.
var ErrNoIndex = errors.New("journal has no index of what is outstanding")

// summaryPart is what the summary's fold reads of the row seq whose JSON is data.
func summaryPart(seq uint64, data []byte) (journal.SummaryPart, error) {
	var r journal.Row
	if err := json.Unmarshal(data, &r); err != nil {
		return journal.SummaryPart{}, fmt.Errorf("%w: row %d: %w", ErrCorrupt, seq, err)
	}
	part := r.ForSummary()
	part.Seq = seq
	return part, nil
}

// rebuildSummary folds every row again into a new summary and its call states, and stores
// both, within tx (a write transaction).
func rebuildSummary(tx *bbolt.Tx) (*journal.Summary, error) {
	calls, err := createIndex(tx)
	if err != nil {
		return nil, err
	}
	sum := journal.NewSummary()
	summed, _, err := rowFormat(tx.Bucket(bucketMeta).Get(keyFormat))
	if err != nil {
		return nil, err
	}
	err = eachRow(tx, 1, func(seq uint64, v []byte) (bool, error) {
		data, err := rowJSON(summed, seq, v)
		if err != nil {
			return false, err
		}
		part, err := summaryPart(seq, data)
		if err != nil {
			return false, err
		}
		return true, sum.Add(part, calls)
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
	err = readFew(path, "summary", func(tx *bbolt.Tx) error {
		runID = string(tx.Bucket(bucketMeta).Get(keyRun))
		last, err := lastSeq(tx)
		if err != nil {
			return err
		}
		sum, err = summaryOf(tx, last)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return sum, runID, nil
}

// ReadOutstanding reads the index kept beside a journal's summary, each list cut at limit, as
// ReadSummary reads the summary: a few pages, never the rows. A journal written before its
// index was kept gives ErrNoIndex.
func ReadOutstanding(path string, limit int) (out *journal.Outstanding, runID string, err error) {
	err = readFew(path, "index", func(tx *bbolt.Tx) error {
		runID = string(tx.Bucket(bucketMeta).Get(keyRun))
		out, err = outstanding(tx, limit)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return out, runID, nil
}

// Outstanding is ReadOutstanding of the journal this handle holds, as of its last commit.
func (j *Journal) Outstanding(limit int) (out *journal.Outstanding, err error) {
	err = guarded(func() error {
		return j.db.View(func(tx *bbolt.Tx) error {
			out, err = outstanding(tx, limit)
			return err
		})
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		err = ErrClosed
	}
	if err != nil {
		return nil, fmt.Errorf("journal: index of %s: %w", j.path, err)
	}
	return out, nil
}

// readFew opens path read-only under a shared lock and runs fn in a read transaction of a
// journal of ours, for what takes a few pages (the summary, the index): a damaged file that
// faults on them is ErrCorrupt, not a crash.
func readFew(path, what string, fn func(tx *bbolt.Tx) error) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("journal: %s %s: %w", what, path, err)
	}
	err = forReader(path, func() error {
		// Within forReader: a file a machine's restart cut to nothing waits for its recovery,
		// as any torn file does; one whose log says it is whole is damaged.
		if !info.Mode().IsRegular() || info.Size() == 0 {
			return fmt.Errorf("%w: empty or not a regular file", ErrCorrupt)
		}
		opts := boltOptions(true, nil)
		opts.Timeout = readerLockWait
		db, err := bbolt.Open(path, 0o600, opts)
		if err != nil {
			return openError(path, err)
		}
		defer db.Close()
		err = guarded(func() error {
			return db.View(func(tx *bbolt.Tx) error {
				if info.Size() < tx.Size() {
					return fmt.Errorf("%w: file has %d bytes but its pages need %d (truncated)", ErrCorrupt, info.Size(), tx.Size())
				}
				meta := tx.Bucket(bucketMeta)
				if meta == nil || string(meta.Get(keySchema)) != Schema {
					return fmt.Errorf("%w: not a %s journal", ErrSchema, Schema)
				}
				return fn(tx)
			})
		})
		if errors.Is(err, berrors.ErrDatabaseNotOpen) {
			err = ErrClosed
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("journal: %s %s: %w", what, path, err)
	}
	return nil
}
