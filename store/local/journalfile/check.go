package journalfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
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

// boltOptions are the options of every open of a journal's file. A writer with a log turns
// NoSync on: its commits are durable once the log is (newWriter). Each commit writes the list
// of the file's free pages (bbolt's default, one page more a commit, which costs a call nothing
// measurable): the next open to write reads it, where a file without one has the open walk
// every page for the free ones, mapping the whole file in (~150 MB for a 100,000-call run whose
// process was killed).
func boltOptions(readOnly bool, openFile func(string, int, os.FileMode) (*os.File, error)) *bbolt.Options {
	return &bbolt.Options{
		Timeout:      lockTimeout,
		ReadOnly:     readOnly,
		FreelistType: bbolt.FreelistMapType,
		OpenFile:     openFile,
	}
}

// fileState is what a successful check learned about a journal.
type fileState struct {
	runID   string
	last    uint64
	summed  bool             // rows end in a checksum (keyFormat)
	logged  bool             // rows go to the log first (formatLogged)
	summary *journal.Summary // nil for a journal written before summaries were kept
}

// openChecked opens path read-only and proves it is an undamaged journal
// before anything may write to it. bbolt writes to a file it is asked to open
// read-write (it formats an empty one), so a damaged file must never get
// that far. The returned db is read-only; info identifies the file checked.
func openChecked(path string) (db *bbolt.DB, st fileState, info os.FileInfo, err error) {
	db, info, err = openFile(path, true)
	if err != nil {
		return nil, st, nil, err
	}
	if st, err = checkDB(db, info.Size(), nil); err != nil {
		_ = db.Close()
		return nil, st, nil, fmt.Errorf("journal: open %s: %w", path, err)
	}
	return db, st, info, nil
}

// openFile opens path read-only with bbolt, once the file is one a journal can be: regular,
// not empty (a read-write open would format an empty file, and a read-only one refuses it
// with an unhelpful error), with both meta pages (metaPages), and, for a check (freeList), its
// list of free pages one bbolt can read (freeListPage): a reader reads none. info is the file
// bbolt opened.
func openFile(path string, freeList bool) (*bbolt.DB, os.FileInfo, error) {
	pre, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("journal: open %s: %w", path, err)
	}
	if !pre.Mode().IsRegular() || pre.Size() == 0 {
		// What a reader says of it too (summary.go): no command goes on from it.
		return nil, nil, fmt.Errorf("journal: open %s: %w: empty or not a regular file", path, ErrCorrupt)
	}
	var f *os.File
	capture := func(name string, flag int, perm os.FileMode) (*os.File, error) {
		var err error
		f, err = os.OpenFile(name, flag, perm)
		return f, err
	}
	db, err := bbolt.Open(path, 0o600, boltOptions(true, capture))
	if err != nil {
		return nil, nil, openError(path, err)
	}
	info, err := f.Stat()
	if err == nil {
		err = metaPages(f, db.Info().PageSize)
	}
	if err == nil && freeList {
		err = freeListPage(f, db.Info().PageSize, info.Size())
	}
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("journal: open %s: %w", path, err)
	}
	return db, info, nil
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
// 1..last without a gap. Damage comes back wrapping ErrCorrupt. walked, if not nil, is called
// once the check's first walk has found every page sound and bbolt's list of the file's free
// pages is loaded: from then on other read transactions may run beside the check.
func checkDB(db *bbolt.DB, fileSize int64, walked func()) (st fileState, err error) {
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
		// bbolt walks the tree on goroutines of its own (its consistency
		// check, and the scan for free pages of a file whose commits wrote
		// no list of them, have no recover), where a bad page kills the
		// process. Walk it here first, where it cannot.
		// Each walk reads every page of the file: what it read is let go as it goes.
		rel := &walkReleaser{tx: tx}
		if err := tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			return walk(b, rel)
		}); err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		checkWalked("walk")
		if walked != nil {
			loadFreeList(tx)
			walked()
		}
		// The file's pages are sound: bbolt's consistency check and the walk of the rows
		// run at once, each on a read transaction of its own (a Tx caches its buckets in
		// maps that two goroutines may not share). The rows' transaction begins and ends
		// here, on either side of the check: bbolt's check loads the db's free list, which
		// a transaction's beginning and end read. A consistency finding is said first.
		rtx, err := db.Begin(false)
		if err != nil {
			return err
		}
		var meta error
		walked := make(chan struct{})
		defer func() { <-walked; _ = rtx.Rollback() }()
		go func() {
			defer close(walked)
			meta = guarded(func() (err error) {
				st, err = readMeta(rtx, &walkReleaser{tx: rtx})
				return err
			})
		}()
		err = consistency(tx)
		<-walked
		checkWalked("rows")
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return meta
	})
	return st, err
}

// walk visits every page and key of b and the buckets under it, checking
// that keys ascend.
func walk(b *bbolt.Bucket, rel *walkReleaser) error {
	c := b.Cursor()
	var prev []byte
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return fmt.Errorf("key %x after %x", k, prev)
		}
		prev = k
		rel.read(len(k) + len(v))
		if v == nil {
			if child := b.Bucket(k); child != nil {
				if err := walk(child, rel); err != nil {
					return fmt.Errorf("bucket %q: %w", k, err)
				}
			}
		}
	}
	return nil
}

// loadFreeList has bbolt read the list of the file's free pages now, once the check's walk has
// found every page sound. Its consistency check reads it first, in a read-only open, under no
// lock, and a transaction that begins or ends meanwhile reads what it writes. A check of page 1,
// which bbolt refuses as out of its range, reads the list and no more; where the file has no
// list, bbolt walks its pages for the free ones, on a goroutine of its own that a bad page would
// crash, as its consistency check does after the walk.
func loadFreeList(tx *bbolt.Tx) {
	for range tx.Check(bbolt.WithPageId(1)) {
	}
}

// consistency runs tx.Check to the end and returns its first finding. The
// channel is drained fully so the checking goroutine can finish.
func consistency(tx *bbolt.Tx) error {
	defer releasingEvery(tx, checkRelease)()
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

// checkWalked is called as each of the check's own walks ends (a test sees what it left mapped):
// "walk", then "rows" once the rows and bbolt's own check are both through.
var checkWalked = func(walk string) {}

// checkRelease is how often the pages tx.Check mapped in are let go. From the page cache it
// maps a journal's pages in at several GB a second (each fault maps the 64 KiB around it): at
// 5 ms a resume of 100,000 calls (a 184 MB file) peaked at ~126 MB resident, ~95 MB at 1 ms,
// in the same time (BenchmarkReplayProcess).
const checkRelease = time.Millisecond

// readMeta checks the schema, run id and row format and walks the rows, whose keys must
// be 1, 2, … without a gap (later seqs are assigned from the last one) and
// whose values must be JSON, with the checksum the format gives them.
func readMeta(tx *bbolt.Tx, rel *walkReleaser) (fileState, error) {
	var st fileState
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return st, fmt.Errorf("%w: no %q bucket, not a crw journal", ErrSchema, bucketMeta)
	}
	if got := string(meta.Get(keySchema)); got != Schema {
		return st, fmt.Errorf("%w: %q, want %q", ErrSchema, got, Schema)
	}
	st.runID = string(meta.Get(keyRun))
	var err error
	if st.summed, st.logged, err = rowFormat(meta.Get(keyFormat)); err != nil {
		return st, err
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
		// bbolt keeps no checksum of values: a row's own checksum finds damage inside it
		// (a row whose checksum holds is the JSON its writer encoded), and in a journal
		// written before rows had one, only JSON that no longer parses does.
		rel.read(len(v))
		data, err := rowJSON(st.summed, seq, v)
		if err != nil {
			return st, err
		}
		if !st.summed && !fastjson.Valid(data) {
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

// openLight opens path read-only and checks only what a reader needs before it reads: the file
// holds the pages its meta names, and the meta bucket says it is a journal of ours. Each read
// then checks what it reads (guarded, eachRow, rowJSON).
func openLight(path string) (db *bbolt.DB, st fileState, err error) {
	db, info, err := openFile(path, false)
	if err != nil {
		return nil, st, err
	}
	if st, err = lightState(db, info); err != nil {
		_ = db.Close()
		return nil, st, fmt.Errorf("journal: open %s: %w", path, err)
	}
	return db, st, nil
}

// lightState is what openLight reads of db, the file info is: the file holds the pages its
// meta names, and the meta bucket says it is a journal of ours.
func lightState(db *bbolt.DB, info os.FileInfo) (st fileState, err error) {
	err = guarded(func() error {
		return db.View(func(tx *bbolt.Tx) error {
			if info.Size() < tx.Size() {
				return fmt.Errorf("%w: file has %d bytes but its pages need %d (truncated)", ErrCorrupt, info.Size(), tx.Size())
			}
			meta := tx.Bucket(bucketMeta)
			if meta == nil {
				return fmt.Errorf("%w: no %q bucket, not a crw journal", ErrSchema, bucketMeta)
			}
			if got := string(meta.Get(keySchema)); got != Schema {
				return fmt.Errorf("%w: %q, want %q", ErrSchema, got, Schema)
			}
			if st.runID = string(meta.Get(keyRun)); st.runID == "" {
				return fmt.Errorf("%w: no run id in %q", ErrCorrupt, bucketMeta)
			}
			var err error
			if st.summed, st.logged, err = rowFormat(meta.Get(keyFormat)); err != nil {
				return err
			}
			if st.last, err = lastSeq(tx); err != nil {
				return err
			}
			sum, err := summaryOf(tx, st.last)
			switch {
			case errors.Is(err, errNoSummary):
			case err != nil:
				return err
			default:
				st.summary = sum
			}
			return nil
		})
	})
	return st, err
}

// metaPages checks both of the file's meta pages as the whole-file check does: each names its
// own page, is a meta page, and holds bbolt's magic and version. bbolt opens a file one of whose
// metas is garbage on the other, an older commit, so an open alone would not say the newest rows
// may be lost. A meta whose checksum alone fails is what a crash tearing bbolt's last write
// leaves, of a commit that never returned: bbolt opens the other, and so does a reader.
func metaPages(f *os.File, pageSize int) error {
	const (
		headerSize = 16         // page id, flags, count, overflow
		metaFlag   = 0x04       // a meta page
		magic      = 0xED0CDAED // bbolt's
		version    = 2
	)
	page := make([]byte, headerSize+8)
	for id := 0; id < 2; id++ {
		if _, err := f.ReadAt(page, int64(id*pageSize)); err != nil {
			return fmt.Errorf("%w: meta page %d does not read: %v", ErrCorrupt, id, err)
		}
		ne := binary.NativeEndian
		meta := page[headerSize:]
		switch {
		case ne.Uint64(page[0:8]) != uint64(id) || ne.Uint16(page[8:10]) != metaFlag:
			return fmt.Errorf("%w: page %d is no meta page", ErrCorrupt, id)
		case ne.Uint32(meta[0:4]) != magic || ne.Uint32(meta[4:8]) != version:
			return fmt.Errorf("%w: meta page %d has no bbolt magic and version", ErrCorrupt, id)
		}
	}
	return nil
}

// freeListPage checks the page that lists the file's free pages, when the current meta names
// one (a writer's close writes it), before bbolt reads it: bbolt allocates room for as many
// ids as the page says it holds, and a count garbled to 2^60 would end the process out of
// memory, where no recover reaches. The current meta is the one bbolt takes: of those whose
// checksum holds, the one of the later transaction. What the list names is bbolt's
// consistency check's to judge.
func freeListPage(f *os.File, pageSize int, fileSize int64) error {
	const (
		headerSize   = 16 // page id, flags, count, overflow
		metaSize     = 64 // magic, version, page size, flags, root (2), free list, pgid, txid, checksum
		freeListFlag = 0x10
		noFreeList   = ^uint64(0)
	)
	ne := binary.NativeEndian
	var free, txid uint64
	found := false
	for id := 0; id < 2; id++ {
		page := make([]byte, headerSize+metaSize)
		if _, err := f.ReadAt(page, int64(id*pageSize)); err != nil {
			return fmt.Errorf("%w: meta page %d does not read: %v", ErrCorrupt, id, err)
		}
		meta := page[headerSize:]
		h := fnv.New64a()
		h.Write(meta[:56])
		if h.Sum64() != ne.Uint64(meta[56:64]) {
			continue // bbolt takes the other one
		}
		if t := ne.Uint64(meta[48:56]); !found || t > txid {
			free, txid, found = ne.Uint64(meta[32:40]), t, true
		}
	}
	if !found || free == noFreeList {
		return nil
	}
	pages := uint64(fileSize) / uint64(pageSize)
	if free < 2 || free >= pages {
		return fmt.Errorf("%w: the list of free pages is at page %d, outside the file's pages 2..%d (truncated?)", ErrCorrupt, free, pages-1)
	}
	header := make([]byte, headerSize+8)
	if _, err := f.ReadAt(header, int64(free)*int64(pageSize)); err != nil {
		return fmt.Errorf("%w: the list of free pages does not read: %v", ErrCorrupt, err)
	}
	if ne.Uint16(header[8:10]) != freeListFlag {
		return fmt.Errorf("%w: page %d, the list of free pages, is no such list", ErrCorrupt, free)
	}
	span := uint64(ne.Uint32(header[12:16])) + 1 // the page and its overflow
	count, first := uint64(ne.Uint16(header[10:12])), uint64(0)
	if count == 0xFFFF { // the count is the first element
		count, first = ne.Uint64(header[headerSize:]), 1
	}
	switch {
	case free+span > pages:
		return fmt.Errorf("%w: the list of free pages (page %d, %d pages) runs past the file's %d pages", ErrCorrupt, free, span, pages)
	case count > span*uint64(pageSize)/8 || (first+count)*8+headerSize > span*uint64(pageSize):
		return fmt.Errorf("%w: the list of free pages (page %d) says it holds %d ids, more than its %d pages do", ErrCorrupt, free, count, span)
	}
	return nil
}

// guarded runs a read of the file's pages: a damaged page that faults (a truncated mapping)
// or trips one of bbolt's assertions is ErrCorrupt, not a crash. bbolt's View rolls its
// transaction back when fn panics.
func guarded(read func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrCorrupt, r)
		}
	}()
	return read()
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
