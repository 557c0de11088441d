package journalfile

import (
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
// reads would stay mapped in.
func (j *Journal) noteRead(n int) {
	if j.readSince.Add(int64(n)) >= int64(releaseEvery) {
		j.readSince.Store(0)
		j.releaseMapped()
	}
}

// releaseMapped drops the file's pages from this process's mapping (MADV_DONTNEED). bbolt
// reads through its mmap the page each commit appends to, so over a long run every page of
// the file would be mapped in and counted in the process's resident memory, though it is page
// cache that the kernel shares and can drop. bbolt's mapping is read-only and shared: the data
// stays in the file and the page cache, and a later read maps the page again. The read
// transaction holds off a remap meanwhile.
func (j *Journal) releaseMapped() {
	_ = j.db.View(func(tx *bbolt.Tx) error {
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, j.db.Info().Data, uintptr(tx.Size()), unix.MADV_DONTNEED)
		return nil
	})
}
