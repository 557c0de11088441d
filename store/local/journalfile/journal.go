// Package journal keeps the journal of one run: a bbolt file of typed rows
// numbered by seq, written by exactly one process.
//
// Rows are appended to an in-memory buffer and made durable by group commit:
// one bbolt transaction, and so one round of fsyncs, covers every row
// buffered when it starts. Sync, Write and AppendThen ask for a commit; Append alone does not,
// so the engine can batch intent rows and commit right before the effect.
//
// It is over 1,500 lines because the journal file is one format: its writer, its reader, the
// index and summary folded in each commit and the checks of a file written to hurt all read
// and write the same buckets, and split apart they would share its internals.
package journalfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/crw-dev/crw/internal/locked"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local/journalfile/rowlog"
)

// Journal is an open journal. A writable one (Create, Open) owns a committer
// goroutine until Close. Its methods are safe for concurrent use.
type Journal struct {
	db       *bbolt.DB
	log      *rowlog.Log // the rows' log, for a writer of a journal that keeps one (logged.go)
	path     string
	runID    string
	readOnly bool
	summed   bool // its rows end in a checksum (keyFormat)
	rebuilt  bool // the open that gave it made the file again from its log (Rebuilt)

	mu      sync.Mutex
	work    sync.Cond        // the committer waits here for rows to commit or for Close
	done    sync.Cond        // Sync waits here for durable to pass its seq
	next    uint64           // last seq assigned by Append
	durable uint64           // last seq committed
	want    uint64           // highest seq someone is waiting to see durable
	pending []entry          // appended, not yet taken by a commit, in seq order
	summary *journal.Summary // of the rows up to durable; replaced by each commit
	spare   []entry          // the previous batch's array, reused for pending
	err     error            // the first failed commit (or unencodable row): the journal is poisoned
	closed  bool
	stopped chan struct{} // closed when the committer returns
	// pendingBytes is the size of pending's rows: past maxPendingBytes, an append asks for a
	// commit itself, so rows nobody syncs (a fan-out waiting for the pool) do not pile up.
	pendingBytes int
	// expected counts the writers Expect announced that have not asked for their commit yet;
	// expectGen numbers the announcements a hold that ran out forgot.
	expected  int
	expectGen uint64
	maxHold   time.Duration // maxHold; tests make it longer
	holding   bool          // the committer is in hold, for tests

	sinceRelease int          // bytes committed since the mapped pages were last released; committer only
	readSince    atomic.Int64 // bytes of rows read since the mapped pages were last released
	wholeReads   atomic.Int32 // reads of every row under way (Each): a file kept whole is released at their end

	commits    atomic.Uint64                  // successful commits, for tests and benchmarks
	commitHook func(first, last uint64) error // test hook, run as each commit begins
	onCommit   atomic.Pointer[func(commits uint64)]
}

// entry is one buffered row, already encoded so the caller may reuse the journal.Row.
type entry struct {
	seq   uint64
	data  []byte
	part  journal.SummaryPart // what the summary's fold reads of it
	after func()              // from AppendThen; run by the committer once seq is durable
}

// Create makes a new journal at path for run runID and opens it for writing.
// The parent directory must exist and path must not (ErrExists).
func Create(path, runID string) (*Journal, error) {
	if runID == "" {
		return nil, fmt.Errorf("journal: create %s: empty run id", path)
	}
	// O_EXCL makes "must not exist" atomic, so two creators cannot both win.
	created := false
	excl := func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag|os.O_CREATE|os.O_EXCL, perm)
		created = err == nil
		return f, err
	}
	db, err := bbolt.Open(path, 0o600, boltOptions(false, excl))
	if err != nil {
		if created {
			// Made by us but not formatted: don't leave it for Open to refuse.
			_ = os.Remove(path)
		}
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("journal: create %s: %w", path, ErrExists)
		}
		return nil, fmt.Errorf("journal: create %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error { return formatFile(tx, runID, formatLogged) })
	var lg *rowlog.Log
	if err == nil {
		lg, err = rowlog.Create(rowlog.Path(path), runID)
	}
	if err == nil {
		// The rows are only durable if the files' names are.
		err = SyncDir(filepath.Dir(path))
	}
	if err != nil {
		_ = db.Close()
		if lg != nil {
			_ = lg.Close()
			_ = os.Remove(rowlog.Path(path))
		}
		_ = os.Remove(path)
		return nil, fmt.Errorf("journal: create %s: %w", path, err)
	}
	return newWriter(db, lg, path, fileState{runID: runID, summed: true, logged: true, summary: journal.NewSummary()}), nil
}

// formatFile makes a new journal's buckets and meta in tx: no rows, an empty summary.
func formatFile(tx *bbolt.Tx, runID, format string) error {
	meta, err := tx.CreateBucket(bucketMeta)
	if err != nil {
		return err
	}
	if err := meta.Put(keySchema, []byte(Schema)); err != nil {
		return err
	}
	if err := meta.Put(keyRun, []byte(runID)); err != nil {
		return err
	}
	if err := meta.Put(keyFormat, []byte(format)); err != nil {
		return err
	}
	if err := putSummary(meta, journal.NewSummary()); err != nil {
		return err
	}
	if _, err := createIndex(tx); err != nil {
		return err
	}
	_, err = tx.CreateBucket(bucketRows)
	return err
}

// Open opens an existing journal for writing, to resume its run. The file is
// checked read-only first (bbolt consistency, schema, seq keys), so a damaged
// file returns ErrCorrupt and is not written to. Another open handle on the
// file gives ErrLocked.
func Open(path string) (*Journal, error) { return OpenReading(path, nil) }

// OpenReading is Open that, before the file is opened to write, gives read the journal
// read-only on the file it checks (a resume reads its rows there: on the pages the check maps
// in, not on the mapping of the open to write, where each would be mapped in again). The
// journal read has is closed when read returns. An error of read's is OpenReading's, as it is,
// once the file has passed its check, and the file is not opened to write; an error of the
// open's comes first. read may be given the file while it is checked, and more than once
// (OpenRun): what it leaves behind is the last call's.
func OpenReading(path string, read func(*Journal) error) (j *Journal, err error) {
	return OpenRun(path, "", read)
}

// OpenRun is OpenReading of the journal of run: a journal whose log is another run's is refused
// before anything is made of it (after a machine's restart, the file is made again from the log).
//
// A file that is not torn (its log closed, or opened last in this boot) and small enough to stay
// mapped in (KeptWhole) is opened read-only, read and checked while the log is opened: the scan
// of the log, the check and read run at once (readWhileChecked). read is then given the file
// once the check's first walk has found its pages sound, before the check has passed, and what
// it did counts only once the check and the log's open have passed; a file the log's open
// makes again, or gives rows it lacks, is read again after.
func OpenRun(path, run string, read func(*Journal) error) (j *Journal, err error) {
	var early *earlyRead
	if read != nil && notTorn(path) {
		early = readWhileChecked(path, read)
	}
	lg, logState, rebuilt, err := openLog(path, run)
	if err != nil {
		early.drop()
		return nil, err
	}
	defer func() {
		if err != nil && lg != nil {
			_ = lg.Close()
		}
	}()
	if rebuilt {
		early.drop() // of the file replaced
		early = nil
	}
	var rdb *bbolt.DB
	var checkedState fileState
	var checked os.FileInfo
	toRead := read // read, while it is still to be given the file checked
	var readErr error
	if early != nil {
		<-early.done
		rdb, checkedState, checked, err = early.db, early.checked, early.info, early.err
		if err != nil {
			return nil, err
		}
		if early.ran && early.read == checkedState.key() {
			toRead, readErr = nil, early.readErr
		}
	} else if rdb, checkedState, checked, err = openChecked(path); err != nil {
		return nil, err
	}
	if err := matchLog(path, checkedState, lg, logState); err != nil {
		_ = rdb.Close()
		return nil, err
	}
	if lg != nil && logState.Last > checkedState.last {
		// The log holds rows the file lacks (a file put back from an older copy, or one whose
		// last commits a failed write lost): the file gets them before anything reads it,
		// and is checked again.
		_ = rdb.Close()
		if err := applyTail(path, checked, lg, checkedState.last); err != nil {
			return nil, err
		}
		if rdb, checkedState, checked, err = openChecked(path); err != nil {
			return nil, err
		}
		toRead = read
	}
	if toRead != nil {
		ro := readOnly(rdb, path, checkedState)
		ro.rebuilt = rebuilt
		readErr = readClosing(ro, toRead)
	}
	if readErr != nil {
		_ = rdb.Close()
		return nil, readErr
	}
	if err := rdb.Close(); err != nil {
		return nil, fmt.Errorf("journal: open %s: %w", path, err)
	}
	// Reopen read-write only the very file that passed.
	db, err := bbolt.Open(path, 0o600, boltOptions(false, sameFile(checked)))
	if err != nil {
		return nil, openError(path, err)
	}
	var st fileState
	var sum *journal.Summary
	err = db.View(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil || string(meta.Get(keySchema)) != Schema {
			return fmt.Errorf("%w: schema changed since it was checked", ErrSchema)
		}
		st.runID = string(meta.Get(keyRun))
		var err error
		if st.summed, st.logged, err = rowFormat(meta.Get(keyFormat)); err != nil {
			return err
		}
		if st.last, err = lastSeq(tx); err != nil {
			return err
		}
		if sum, err = summaryOf(tx, st.last); err != nil {
			return err
		}
		_, err = indexOf(tx)
		return err
	})
	if errors.Is(err, errNoSummary) || errors.Is(err, ErrNoIndex) {
		// A journal written before summaries (or their index) were kept gets them now, once.
		err = db.Update(func(tx *bbolt.Tx) error {
			var err error
			sum, err = rebuildSummary(tx)
			return err
		})
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("journal: open %s: %w", path, err)
	}
	st.summary = sum
	if lg != nil {
		// The file's commits from now on are not fsync'd: the log says from where it must be
		// made again after a machine's crash, once the file holds what the last writer put.
		st.logged = true
		err = logMissing(db, lg, logState.Last, st.last)
		if err == nil {
			err = db.Sync() // what the last writer put unsynced
		}
		if err == nil {
			err = lg.Begin(st.last, st.runID)
		}
		if err != nil {
			_ = db.Close()
			return nil, logError(path, err)
		}
	}
	return newWriter(db, lg, path, st), nil
}

// readClosing gives ro to read, and closes it once read has returned: a later use of it is
// ErrClosed.
func readClosing(ro *Journal, read func(*Journal) error) error {
	err := read(ro)
	ro.mu.Lock()
	ro.closed = true
	ro.mu.Unlock()
	return err
}

// notTorn reports, without reading the log's frames, whether the file of the journal at path
// is one its writer's open would not make again and that may be read before its check: it has
// no log, its log's last writer closed it, or opened it in this boot (the file is then what
// forReader lets readers read), and it is small enough to stay mapped in through the check and
// the read (KeptWhole).
func notTorn(path string) bool {
	info, err := os.Stat(path)
	if err != nil || !KeptWhole(info.Size()) {
		return false
	}
	logPath := rowlog.Path(path)
	if _, err := os.Lstat(logPath); err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return rowlog.Closed(logPath) || rowlog.OpenedInThisBoot(logPath)
}

// earlyRead is a read of a journal's file made while it is checked (readWhileChecked).
type earlyRead struct {
	done    chan struct{} // closed once both have ended
	db      *bbolt.DB     // the file opened read-only: nil when it did not open
	info    os.FileInfo
	checked fileState // what the check found
	err     error     // the check's error (the open's)
	ran     bool      // read was given the file
	read    stateKey  // the state of the file as read was given it
	readErr error
}

// stateKey is what a journal read-only is made of, of a fileState: the file read and the file
// checked must agree on it.
type stateKey struct {
	runID          string
	last           uint64
	summed, logged bool
}

func (st fileState) key() stateKey {
	return stateKey{runID: st.runID, last: st.last, summed: st.summed, logged: st.logged}
}

// readWhileChecked opens the journal's file at path read-only, checks it (checkDB) and, once
// the check's first walk has found every page sound, gives it to read (on the state a reader's
// open finds, lightState), each on a goroutine of its own: the check's other walks and the
// read's decoders share the machine's cores with the scan of the log the caller makes
// meanwhile. The read is guarded as any reader's (a page that does not read is an error, not a
// crash).
func readWhileChecked(path string, read func(*Journal) error) *earlyRead {
	e := &earlyRead{done: make(chan struct{})}
	go func() {
		defer close(e.done)
		if e.db, e.info, e.err = openFile(path, true); e.err != nil {
			return
		}
		light, lightErr := lightState(e.db, e.info)
		var reading chan struct{}
		e.checked, e.err = checkDB(e.db, e.info.Size(), func() {
			if lightErr != nil {
				return // read on the file checked, if it passes
			}
			reading = make(chan struct{})
			e.ran, e.read = true, light.key()
			go func() {
				defer close(reading)
				e.readErr = readClosing(readOnly(e.db, path, light), read)
			}()
		})
		if e.err != nil {
			e.err = fmt.Errorf("journal: open %s: %w", path, e.err)
		}
		if reading != nil {
			<-reading
		}
		if e.err != nil {
			_ = e.db.Close()
			e.db = nil
		}
	}()
	return e
}

// drop waits for the early read and lets its file go, unused (nil: none was made).
func (e *earlyRead) drop() {
	if e == nil {
		return
	}
	<-e.done
	if e.db != nil {
		_ = e.db.Close()
	}
}

// Rebuilt reports whether the open that gave the journal made its file again from its log: the
// machine had restarted while the file was being written (a journal OpenRun gives its read).
func (j *Journal) Rebuilt() bool { return j.rebuilt }

// readOnly is a journal that reads db, read-only, of the file at path whose state st is.
func readOnly(db *bbolt.DB, path string, st fileState) *Journal {
	j := &Journal{db: db, path: path, runID: st.runID, summed: st.summed, readOnly: true, next: st.last, durable: st.last, summary: st.summary}
	j.work.L, j.done.L = &j.mu, &j.mu
	return j
}

// OpenReadOnly opens a journal for reading under a shared lock, with the same
// checks and errors as Open. Append and Sync on it fail with ErrReadOnly.
func OpenReadOnly(path string) (*Journal, error) {
	var db *bbolt.DB
	var st fileState
	err := forReader(path, func() (err error) {
		db, st, _, err = openChecked(path)
		return err
	})
	if err != nil {
		if db != nil {
			_ = db.Close()
		}
		return nil, err
	}
	return readOnly(db, path, st), nil
}

// OpenReader opens a journal for reading under a shared lock, as OpenReadOnly does, but checks
// only what it reads: the file's size against its pages and its meta bucket at once, then each
// row as it is read (its key, its checksum, its JSON), a page that does not read being
// ErrCorrupt rather than a crash. A reader that passes over the rows once (a replay, a trace)
// would otherwise read the whole file twice, and a reader of a few rows all of it.
func OpenReader(path string) (*Journal, error) {
	var db *bbolt.DB
	var st fileState
	err := forReader(path, func() (err error) {
		db, st, err = openLight(path)
		return err
	})
	if err != nil {
		if db != nil {
			_ = db.Close()
		}
		return nil, err
	}
	return readOnly(db, path, st), nil
}

// newWriter starts the committer of a journal opened for writing.
func newWriter(db *bbolt.DB, lg *rowlog.Log, path string, st fileState) *Journal {
	last := st.last
	// A logged journal's commits are durable once its log is fsync'd.
	db.NoSync = lg != nil
	j := &Journal{db: db, log: lg, path: path, runID: st.runID, summed: st.summed, next: last, durable: last, want: last, summary: st.summary, stopped: make(chan struct{}), maxHold: maxHold}
	j.work.L, j.done.L = &j.mu, &j.mu
	go j.run()
	return j
}

// RunID returns the run id kept in the journal's meta bucket.
func (j *Journal) RunID() string { return j.runID }

// Path returns the journal's file path.
func (j *Journal) Path() string { return j.path }

// LastSeq returns the last seq assigned, durable or not; at open it is the
// last row in the file.
func (j *Journal) LastSeq() uint64 { return locked.Read(&j.mu, &j.next) }

// DurableSeq returns the last seq known to be committed.
func (j *Journal) DurableSeq() uint64 { return locked.Read(&j.mu, &j.durable) }

// Rows returns every durable row in seq order. Rows still buffered are not
// included; Sync first to see them.
func (j *Journal) Rows() ([]journal.Row, error) {
	j.mu.Lock()
	closed := j.closed
	j.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("journal: rows: %w", ErrClosed)
	}
	// Copy the values out in one read transaction, then decode them on every core: a resume
	// reads its whole journal before it can go on, and decoding is most of that time.
	var raw [][]byte
	err := guarded(func() error {
		return j.db.View(func(tx *bbolt.Tx) error {
			b := tx.Bucket(bucketRows)
			if b == nil {
				return fmt.Errorf("%w: no %q bucket", ErrCorrupt, bucketRows)
			}
			raw = make([][]byte, 0, b.Stats().KeyN)
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				seq, ok := parseSeqKey(k)
				if !ok || seq != uint64(len(raw)+1) {
					return fmt.Errorf("%w: rows key %x after seq %d", ErrCorrupt, k, len(raw))
				}
				data, err := rowJSON(j.summed, seq, v)
				if err != nil {
					return err
				}
				raw = append(raw, append([]byte(nil), data...))
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("journal: rows of %s: %w", j.path, err)
	}
	rows, err := journal.DecodeRows(raw)
	if err != nil {
		return nil, fmt.Errorf("journal: rows of %s: %w: %w", j.path, ErrCorrupt, err)
	}
	return rows, nil
}

// Raw returns the JSON of up to limit durable rows from seq from on, in order, their checksums
// checked: what a reader in another process is sent while this one holds the journal. The read transaction
// lasts only while they are copied, so a slow reader never holds off a commit.
func (j *Journal) Raw(from uint64, limit int) ([][]byte, error) {
	var c chunk
	if err := j.readChunk(from, limit, &c); err != nil {
		return nil, err
	}
	return c.rows(), nil
}

// chunk is rows copied out of the file in one read transaction: their JSON end to end in one
// buffer, and where each ends. Each reuses one for every chunk it reads.
type chunk struct {
	buf  []byte
	ends []int
}

// rows slices the chunk into its rows, each capped so that no append runs into the next.
func (c *chunk) rows() [][]byte {
	if len(c.ends) == 0 {
		return nil
	}
	out := make([][]byte, len(c.ends))
	start := 0
	for i, end := range c.ends {
		out[i] = c.buf[start:end:end]
		start = end
	}
	return out
}

// readChunk copies up to limit durable rows from seq from on into c, which it empties first.
func (j *Journal) readChunk(from uint64, limit int, c *chunk) error {
	from = max(from, 1)
	c.buf, c.ends = c.buf[:0], c.ends[:0]
	if limit <= 0 {
		return nil
	}
	err := guarded(func() error {
		return j.db.View(func(tx *bbolt.Tx) error {
			return eachRow(tx, from, func(seq uint64, v []byte) (bool, error) {
				data, err := rowJSON(j.summed, seq, v)
				if err != nil {
					return false, err
				}
				c.buf = append(c.buf, data...)
				c.ends = append(c.ends, len(c.buf))
				return len(c.ends) < limit, nil
			})
		})
	})
	j.noteRead(len(c.buf))
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("journal: raw: %w", ErrClosed)
	}
	if err != nil {
		return fmt.Errorf("journal: raw %s from %d: %w", j.path, from, err)
	}
	return nil
}

// Page returns up to limit durable rows from seq from on, in order, decoded on every core.
func (j *Journal) Page(from uint64, limit int) ([]journal.Row, error) {
	from = max(from, 1)
	raw, err := j.Raw(from, limit)
	if err != nil {
		return nil, err
	}
	rows, err := journal.DecodeRowsFrom(raw, from)
	if err != nil {
		return nil, fmt.Errorf("journal: rows of %s from %d: %w: %w", j.path, from, ErrCorrupt, err)
	}
	return rows, nil
}

// eachChunk is how many rows Each copies out of the file in one read transaction.
const eachChunk = 1024

// Each calls fn with up to limit durable rows from seq from on (limit 0: every one), in order,
// stopping at fn's first error, which it returns as is. fn must not keep the journal.Row it is
// given: a reader that passes over a whole journal (a resume, a shadow replay) allocates no
// row of its own for the rows it only looks at. The rows are copied out a chunk at a time in
// short read transactions, so fn may do anything, Sync included.
//
// A reading of the whole journal from a seq on (limit 0: a replay's first reading) is a
// pipeline: decoders read and decode the chunks ahead of fn, each its own chunks in turn
// (chunk k is decoder k mod n's), a batch at a time, so that the reading, the decoding and the
// work on the rows share the machine's cores; fn is given the rows in order. A bounded reading
// (a page Load reads again for a delivery) is done here alone: its batches would cost more than
// the overlap gives.
func (j *Journal) Each(from uint64, limit int, fn func(*journal.Row) error) error {
	from = max(from, 1)
	if limit <= 0 {
		// A file kept whole (keptWhole) stays mapped in through a read to its end: let it go
		// once, at the end.
		j.wholeReads.Add(1)
		defer func() {
			j.wholeReads.Add(-1)
			j.releaseMapped()
		}()
	}
	decoders := min(runtime.GOMAXPROCS(0), maxDecoders)
	if limit > 0 || decoders < 2 {
		return j.eachInline(from, limit, fn)
	}
	stop := make(chan struct{})
	ready := make([]chan *rowBatch, decoders)
	free := make([]chan *rowBatch, decoders)
	var wg sync.WaitGroup
	for d := range decoders {
		ready[d], free[d] = make(chan *rowBatch, 1), make(chan *rowBatch, eachBatches)
		wg.Add(1)
		go func() {
			defer wg.Done()
			j.decodeAhead(chunking{from: from, first: d, every: decoders}, stop, free[d], ready[d])
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	for k := 0; ; k++ {
		d := k % decoders
		for {
			b := <-ready[d] // a decoder gives every chunk of its a last batch, or an end
			for i := range b.n {
				if err := fn(&b.rows[i]); err != nil {
					return err
				}
			}
			if b.err != nil {
				return b.err
			}
			if b.end {
				return nil
			}
			last := b.last
			free[d] <- b
			if last {
				break
			}
		}
	}
}

// maxDecoders bounds the decoders of a pipelined Each: with the reader of the rows, two fill a
// 2-core machine, where a journal's decoding (~2 µs a row) is what the History waits for.
const maxDecoders = 2

// eachBatch is how many decoded rows a pipelined Each hands over at a time, and eachBatches
// how many batches each decoder makes at most, as it needs them: what it holds in memory
// (a journal.Row is ~1.5 KB) however long the journal. Batches of 256 rows, all made before
// the first row was read, cost a replay of a run of one call ~5 ms of page faults.
const (
	eachBatch   = 64
	eachBatches = 4
)

// rowBatch is rows decoded ahead of a pipelined Each's fn: the first n, then err, the
// reading's end (the rows before it are good). last: the batch ends its chunk; end: it ends
// the journal (its chunk was the last).
type rowBatch struct {
	rows      []journal.Row
	n         int
	err       error
	last, end bool
}

// chunking is which chunks of a pipelined Each a decoder reads: chunk k starts at seq
// from+k*eachChunk (a journal's seqs have no gaps), and the decoder's are first, first+every, …
type chunking struct {
	from         uint64
	first, every int
}

// decodeAhead reads and decodes its chunks into the batches it takes from free and gives to
// ready, in order, until the rows end, a row cannot be read or stop is closed.
func (j *Journal) decodeAhead(ch chunking, stop <-chan struct{}, free <-chan *rowBatch, ready chan<- *rowBatch) {
	var c chunk
	made := 0
	take := func() *rowBatch {
		var b *rowBatch
		select {
		case b = <-free:
		default:
			if made < eachBatches {
				made++
				return &rowBatch{rows: make([]journal.Row, eachBatch)}
			}
			select {
			case b = <-free:
			case <-stop:
				return nil
			}
		}
		b.n, b.err, b.last, b.end = 0, nil, false, false
		return b
	}
	give := func(b *rowBatch) bool {
		select {
		case ready <- b:
			return true
		case <-stop:
			return false
		}
	}
	for k := ch.first; ; k += ch.every {
		b := take()
		if b == nil {
			return
		}
		from := ch.from + uint64(k)*eachChunk
		if err := j.readChunk(from, eachChunk, &c); err != nil {
			b.err = err
			give(b)
			return
		}
		raw := c.rows()
		for i, data := range raw {
			if b.n == len(b.rows) {
				if !give(b) {
					return
				}
				if b = take(); b == nil {
					return
				}
			}
			seq := from + uint64(i)
			if err := journal.DecodeInto(data, &b.rows[b.n], seq); err != nil {
				b.err = fmt.Errorf("journal: rows of %s: %w: %w", j.path, ErrCorrupt, err)
				give(b)
				return
			}
			b.n++
		}
		b.last, b.end = true, len(raw) < eachChunk
		if !give(b) || b.end {
			return
		}
	}
}

// eachInline is Each on the caller's goroutine alone, for a short reading.
func (j *Journal) eachInline(from uint64, limit int, fn func(*journal.Row) error) error {
	var row journal.Row
	var c chunk
	for done := 0; limit <= 0 || done < limit; {
		n := eachChunk
		if limit > 0 {
			n = min(n, limit-done)
		}
		if err := j.readChunk(from, n, &c); err != nil {
			return err
		}
		raw := c.rows()
		for i, data := range raw {
			seq := from + uint64(i)
			if err := journal.DecodeInto(data, &row, seq); err != nil {
				return fmt.Errorf("journal: rows of %s: %w: %w", j.path, ErrCorrupt, err)
			}
			if err := fn(&row); err != nil {
				return err
			}
		}
		if len(raw) < n {
			return nil
		}
		from += uint64(len(raw))
		done += len(raw)
	}
	return nil
}

// Scan calls fn with each durable row from seq from on, in order, stopping at
// fn's first error, which it returns as is. Rows are decoded inside a read
// transaction, so fn may keep the journal.Row but must not call Sync, Write or Close:
// a commit may need the remap that this transaction holds off.
func (j *Journal) Scan(from uint64, fn func(*journal.Row) error) error {
	j.mu.Lock()
	closed := j.closed
	j.mu.Unlock()
	if closed {
		return fmt.Errorf("journal: scan: %w", ErrClosed)
	}
	from = max(from, 1)
	var fnErr error
	err := guarded(func() error {
		return j.db.View(func(tx *bbolt.Tx) error {
			return eachRow(tx, from, func(seq uint64, v []byte) (bool, error) {
				data, err := rowJSON(j.summed, seq, v)
				if err != nil {
					return false, err
				}
				var r journal.Row
				if err := json.Unmarshal(data, &r); err != nil {
					return false, fmt.Errorf("%w: row %d: %w", ErrCorrupt, seq, err)
				}
				if r.Seq != seq {
					return false, fmt.Errorf("%w: row under key %d says seq %d", ErrCorrupt, seq, r.Seq)
				}
				if err := fn(&r); err != nil {
					fnErr = err
					return false, err
				}
				return true, nil
			})
		})
	})
	switch {
	case fnErr != nil:
		return fnErr
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		return fmt.Errorf("journal: scan: %w", ErrClosed)
	case err != nil:
		return fmt.Errorf("journal: scan %s from %d: %w", j.path, from, err)
	}
	return nil
}

// eachRow calls fn with each stored row from seq from on, in order, within tx, until fn says
// to stop or fails; a missing seq is corruption.
func eachRow(tx *bbolt.Tx, from uint64, fn func(seq uint64, v []byte) (bool, error)) error {
	b := tx.Bucket(bucketRows)
	if b == nil {
		return fmt.Errorf("%w: no %q bucket", ErrCorrupt, bucketRows)
	}
	c := b.Cursor()
	want := from
	for k, v := c.Seek(seqKey(from)); k != nil; k, v = c.Next() {
		if seq, ok := parseSeqKey(k); !ok || seq != want {
			return fmt.Errorf("%w: rows key %x where seq %d was due", ErrCorrupt, k, want)
		}
		if more, err := fn(want, v); err != nil || !more {
			return err
		}
		want++
	}
	return nil
}

// Close commits the rows still buffered, stops the committer and closes the
// file. On a poisoned journal nothing more is written and the poisoning error
// is returned.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return fmt.Errorf("journal: close %s: %w", j.path, ErrClosed)
	}
	j.closed = true
	j.work.Signal()
	j.mu.Unlock()

	if j.stopped != nil {
		<-j.stopped
	}
	j.mu.Lock()
	err := j.err
	j.mu.Unlock()
	if !j.readOnly && err == nil && j.commits.Load() > 0 {
		// A writer that wrote nothing (a resume refused once the journal was open) leaves the
		// file as it found it.
		err = j.syncFile()
	}
	if !j.readOnly && err == nil && j.log != nil {
		// The file is fsync'd with every commit (with none, the open's fsync holds): the log
		// says it may be trusted after a restart.
		err = j.log.Checkpoint(j.durable)
	}
	if j.log != nil {
		_ = j.log.Close()
	}
	closeErr := j.db.Close()
	if closeErr != nil {
		closeErr = fmt.Errorf("journal: close %s: %w", j.path, closeErr)
		if err == nil {
			return closeErr
		}
		return errors.Join(err, closeErr)
	}
	return err
}

// syncFile fsyncs the file with every commit the writer made (they were not: the log held
// them), as the writer lets go of it.
func (j *Journal) syncFile() error {
	if err := j.db.Sync(); err != nil {
		return fmt.Errorf("journal: close %s: fsync the file: %w", j.path, err)
	}
	return nil
}

// SyncDir fsyncs a directory so a file just created in it survives a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
