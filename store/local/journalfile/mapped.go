package journalfile

import (
	"time"

	"go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// releaseEvery is how many bytes of rows may be committed between two releases of the
// journal's mapped pages.
var releaseEvery = 2 << 20

// noteCommitted counts a batch's bytes and releases the mapped pages once releaseEvery bytes
// were committed since the last release. It runs on the committer, between commits.
func (j *Journal) noteCommitted(batch []entry) {
	for _, e := range batch {
		j.sinceRelease += len(e.data)
	}
	if j.sinceRelease >= releaseEvery {
		j.sinceRelease = 0
		j.releaseMapped()
	}
}

// noteRead counts the bytes of rows read and releases the mapped pages once releaseEvery bytes
// were read since the last release: a resume pages through the whole journal, and each page it
// reads would stay mapped in. While a read of every row is under way (Each, which releases
// them at its end), a file small enough to keep whole (keptWhole) stays mapped in.
func (j *Journal) noteRead(n int) {
	if j.readSince.Add(int64(n)) >= int64(releaseEvery) {
		j.readSince.Store(0)
		_ = j.db.View(func(tx *bbolt.Tx) error {
			if j.wholeReads.Load() == 0 || !keptWhole(tx) {
				releaseTx(tx)
			}
			return nil
		})
	}
}

// keptWhole reports whether tx's file is small enough for its reads to leave all of it mapped
// in: at most 16 × releaseEvery (32 MiB; a journal of 10,000 calls is ~16 MiB). Its pages
// are then at most that much of the process's resident memory, and releasing them would only
// have each walk and read after the release fault them in again: the check before an open to
// write walks the file three times, and releasing every 1,024 keys made a 10,000-call
// journal's check ~58 ms instead of ~20.
func keptWhole(tx *bbolt.Tx) bool { return KeptWhole(tx.Size()) }

// KeptWhole reports whether a journal of size bytes is small enough for its reads to leave all
// of it mapped in (keptWhole).
func KeptWhole(size int64) bool { return size <= 16*int64(releaseEvery) }

// releaseMapped drops the file's pages from this process's mapping (MADV_DONTNEED). bbolt
// reads through its mmap the page each commit appends to, so over a long run every page of
// the file would be mapped in and counted in the process's resident memory, though it is page
// cache that the kernel shares and can drop. bbolt's mapping is read-only and shared: the data
// stays in the file and the page cache, and a later read maps the page again. The read
// transaction holds off a remap meanwhile.
func (j *Journal) releaseMapped() {
	_ = j.db.View(func(tx *bbolt.Tx) error {
		releaseTx(tx)
		return nil
	})
}

// releaseTx drops the pages of tx's file from this process's mapping (see releaseMapped). tx
// holds off a remap while it is open.
func releaseTx(tx *bbolt.Tx) {
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, tx.DB().Info().Data, uintptr(tx.Size()), unix.MADV_DONTNEED)
}

// walkReleaser releases the mapped pages of a walk of the whole file (the check before an open
// to write) every releaseEvery bytes or releaseKeys keys it read: the walk would leave every
// page of the file mapped in (~165 MB for a journal of 100,000 calls). Keys count as well as
// bytes: the pages of the calls index are spread over the whole file (each commit writes
// the ones it changed at its end), and each page read maps the 64 KiB around it, so 100,000
// short keys map ~120 MB.
type walkReleaser struct {
	tx          *bbolt.Tx
	bytes, keys int
}

// releaseKeys is how many keys a walk reads between two releases at most.
const releaseKeys = 1024

// read counts a key and value of n bytes, and releases once releaseEvery bytes or releaseKeys
// keys were read since the last release, unless the file is kept whole (keptWhole).
func (w *walkReleaser) read(n int) {
	w.bytes += n
	w.keys++
	if w.bytes >= releaseEvery || w.keys >= releaseKeys {
		w.bytes, w.keys = 0, 0
		if !keptWhole(w.tx) {
			releaseTx(w.tx)
		}
	}
}

// releasingEvery releases tx's mapped pages every period until the returned stop is called: a
// walk bbolt makes on its own (tx.Check) reports no progress to count. A file kept whole
// (keptWhole) is not released.
func releasingEvery(tx *bbolt.Tx, period time.Duration) (stop func()) {
	if keptWhole(tx) {
		return func() {}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				releaseTx(tx)
			}
		}
	}()
	return func() { close(done); <-finished; releaseTx(tx) }
}
