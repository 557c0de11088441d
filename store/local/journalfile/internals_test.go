package journalfile

import "go.etcd.io/bbolt"

// Test-only access to internals, for the tests in package journal_test.

// CommitCount returns how many commits j has made.
func CommitCount(j *Journal) uint64 { return j.commits.Load() }

// SetCommitHook makes fn run inside every later commit's transaction; an
// error from fn fails the commit. Set it before the first Append.
func SetCommitHook(j *Journal, fn func(first, last uint64) error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.commitHook = fn
}

// PendingLen returns how many rows wait for a commit.
func PendingLen(j *Journal) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.pending)
}

// PutRaw stores data under seq behind the writer's back, as a second writer would (with the
// checksum the journal's rows carry).
func PutRaw(j *Journal, seq uint64, data []byte) error {
	if j.summed {
		data = seal(append([]byte(nil), data...))
	}
	return j.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketRows).Put(seqKey(seq), data)
	})
}
