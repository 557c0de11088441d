package journalfile

import (
	"encoding/json"
	"errors"
	"time"

	"go.etcd.io/bbolt"

	"github.com/crw-dev/crw/journal"
)

// Test-only access to internals, for the tests in package journal_test.

// CommitCount returns how many commits j has made.
func CommitCount(j *Journal) uint64 { return j.commits.Load() }

// SetCommitHook makes fn run as every later commit begins, before it writes; an
// error from fn fails the commit. Set it before the first Append.
func SetCommitHook(j *Journal, fn func(first, last uint64) error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.commitHook = fn
}

// SetMaxHold sets how long a commit waits for the writers Expect announced. Set it before the
// first Expect.
func SetMaxHold(j *Journal, d time.Duration) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.maxHold = d
}

// Expected returns how many writers Expect announced that the committer still waits for.
func Expected(j *Journal) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.expected
}

// Holding reports whether the committer waits for the writers Expect announced.
func Holding(j *Journal) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.holding
}

// Asked reports whether a commit of rows not yet durable was asked for.
func Asked(j *Journal) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.want > j.durable
}

// PendingLen returns how many rows wait for a commit.
func PendingLen(j *Journal) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.pending)
}

// PutRaw stores data (a row's JSON) under seq behind the writer's back, as a second writer
// would: with the checksum the journal's rows carry and the summary that covers it.
func PutRaw(j *Journal, seq uint64, data []byte) error {
	var r journal.Row
	if err := json.Unmarshal(data, &r); err != nil {
		return err
	}
	if j.summed {
		data = seal(append([]byte(nil), data...))
	}
	return j.db.Update(func(tx *bbolt.Tx) error {
		if err := tx.Bucket(bucketRows).Put(seqKey(seq), data); err != nil {
			return err
		}
		sum, err := summaryOf(tx, seq-1)
		if err != nil {
			return err
		}
		return foldSummary(tx, sum, []entry{{seq: seq, data: data, part: r.ForSummary()}})
	})
}

// DropSummary removes the summary and its call states, as a journal written before summaries
// were kept has neither.
func DropSummary(path string) error { return updateFile(path, dropSummary) }

func dropSummary(tx *bbolt.Tx) error {
	if err := tx.Bucket(bucketMeta).Delete(keySummary); err != nil {
		return err
	}
	return tx.DeleteBucket(bucketCalls)
}

// DropIndex removes the index kept beside the summary, as a journal written before it was kept
// has none (but has its summary).
func DropIndex(path string) error {
	return updateFile(path, func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{bucketOpen, bucketUnknown, bucketVerdicts} {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		return nil
	})
}

// PutSummaryJSON replaces the stored summary with data.
func PutSummaryJSON(path string, data []byte) error {
	return updateFile(path, func(tx *bbolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySummary, data) })
}

// RowBytes returns a row's stored bytes (its JSON and, by the journal's format, its checksum).
func RowBytes(path string, seq uint64) ([]byte, error) {
	var data []byte
	err := updateFile(path, func(tx *bbolt.Tx) error {
		data = append([]byte(nil), tx.Bucket(bucketRows).Get(seqKey(seq))...)
		return nil
	})
	return data, err
}

// PutRowBytes replaces a row's stored bytes, summary untouched: damage inside a row.
func PutRowBytes(path string, seq uint64, data []byte) error {
	return updateFile(path, func(tx *bbolt.Tx) error { return tx.Bucket(bucketRows).Put(seqKey(seq), data) })
}

func updateFile(path string, fn func(tx *bbolt.Tx) error) error {
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		return err
	}
	err = db.Update(fn)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

// SetReleaseEvery sets how many committed bytes go between two releases of the mapped pages,
// and returns a function that puts the old value back.
func SetReleaseEvery(n int) (restore func()) {
	old := releaseEvery
	releaseEvery = n
	return func() { releaseEvery = old }
}

// PutSealed stores data under seq in the file at path with a checksum that holds, whatever
// data is: what a writer that encoded a broken row (or a forger) would leave.
func PutSealed(path string, seq uint64, data []byte) error {
	return updateFile(path, func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketRows).Put(seqKey(seq), seal(append([]byte(nil), data...)))
	})
}

// CheckWalks checks the journal at path as an open to write does (openChecked), and calls
// fn as each of the check's own walks ends ("walk", "rows"), while their pages are mapped.
func CheckWalks(path string, fn func(walk string)) error {
	checkWalked = fn
	defer func() { checkWalked = func(string) {} }()
	db, _, _, err := openChecked(path)
	if err != nil {
		return err
	}
	return db.Close()
}

// Abandon lets j go as a process killed now would: the committer stopped once the rows asked
// for are committed, the files closed with no checkpoint in the log and no free pages written.
func Abandon(j *Journal) {
	j.mu.Lock()
	j.poison(errors.New("abandoned"))
	j.closed = true
	j.work.Signal()
	j.mu.Unlock()
	<-j.stopped
	if j.log != nil {
		_ = j.log.Close()
	}
	_ = j.db.Close()
}
