package journalfile

import (
	"fmt"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local/journalfile/rowlog"
)

// Append gives each row the next seq, sets At to now (UTC) where it is zero,
// buffers the rows and returns the last seq given. Nothing is written until a
// commit: Sync (or Write, AppendThen, Close) asks for one. The rows are
// encoded here, so the caller may reuse them once Append returns.
//
// On a poisoned, closed or read-only journal the rows are kept out and Append
// returns 0; Sync then reports why.
func (j *Journal) Append(rows ...*journal.Row) uint64 {
	seq, _ := j.append(rows, nil)
	return seq
}

// AppendThen appends row like Append and asks for a commit without waiting
// for it. after is called once the row is durable, on the committer
// goroutine, in seq order: every hook of one commit runs before any hook of
// the next. after must be quick and must not call Sync, Write or Close (the
// committer would wait on itself); it may Append. If the row is never made
// durable (poisoned journal) after is never called. A nil after only asks
// for the commit.
func (j *Journal) AppendThen(row *journal.Row, after func()) uint64 {
	if after == nil {
		after = func() {}
	}
	seq, _ := j.append([]*journal.Row{row}, after)
	return seq
}

// Sync blocks until every row with Seq ≤ seq is durable, committing the
// buffered rows if need be. Concurrent callers share commits: while one commit
// runs, the rows appended meanwhile wait to go together in the next.
// A poisoned journal returns its error, every time.
func (j *Journal) Sync(seq uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.err != nil:
		return j.err
	case j.readOnly:
		return fmt.Errorf("journal: sync %d: %w", seq, ErrReadOnly)
	case j.closed:
		return fmt.Errorf("journal: sync %d: %w", seq, ErrClosed)
	case seq <= j.durable:
		return nil
	case seq > j.next:
		return fmt.Errorf("journal: sync %d: only %d rows were appended", seq, j.next)
	}
	if seq > j.want {
		j.want = seq
		j.work.Signal()
	}
	for j.err == nil && j.durable < seq {
		j.done.Wait()
	}
	return j.err
}

// Write appends rows and syncs them: Append then Sync. With no rows it syncs
// everything appended so far.
func (j *Journal) Write(rows ...*journal.Row) (uint64, error) {
	seq, err := j.append(rows, nil)
	if err == nil {
		err = j.Sync(seq)
	}
	if err != nil {
		return 0, err
	}
	return seq, nil
}

// append buffers rows; after, if not nil, goes with the last row and makes
// the append ask for a commit. The error says why rows were kept out.
func (j *Journal) append(rows []*journal.Row, after func()) (uint64, error) {
	for _, r := range rows {
		if r == nil {
			panic("journal: append of a nil row")
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.err != nil:
		return 0, j.err
	case j.readOnly:
		return 0, fmt.Errorf("journal: append: %w", ErrReadOnly)
	case j.closed:
		return 0, fmt.Errorf("journal: append: %w", ErrClosed)
	case len(rows) == 0:
		return j.next, nil
	}
	// Seqs and times are given under the lock, so At never goes backwards
	// along seq (short of the wall clock itself).
	var now time.Time
	for i, r := range rows {
		r.Seq = j.next + uint64(i) + 1
		if r.At.IsZero() {
			if now.IsZero() {
				now = time.Now().UTC()
			}
			r.At = now
		}
		data, err := journal.Encode(r)
		if err != nil {
			// Append cannot return the error and a row dropped quietly would
			// leave the engine holding a seq with no row: poison, so that
			// the next Sync says why.
			j.poison(fmt.Errorf("journal: encode row %d (%s): %w", r.Seq, r.Type, err))
			return 0, j.err
		}
		if j.summed {
			data = seal(data)
		}
		if j.log != nil && len(data) > rowlog.MaxRow() {
			// The log would refuse it after the file took it: refused before either does.
			j.poison(fmt.Errorf("journal: row %d (%s) has %d bytes, more than a journal's row may (%d)", r.Seq, r.Type, len(data), rowlog.MaxRow()))
			return 0, j.err
		}
		j.pending = append(j.pending, entry{seq: r.Seq, data: data, part: r.ForSummary()})
		j.pendingBytes += len(data)
	}
	j.next += uint64(len(rows))
	if after != nil {
		// The hook waits on durability, so this row needs a commit now.
		j.pending[len(j.pending)-1].after = after
	}
	if after != nil || j.pendingBytes >= maxPendingBytes {
		j.want = j.next
		j.work.Signal()
	}
	return j.next, nil
}

// maxPendingBytes bounds the rows Append buffers before it asks for a commit of its own.
const maxPendingBytes = 1 << 20

// poison records the first failure and drops the buffered rows; every later
// Append, Sync and Write returns err. Called with j.mu held.
func (j *Journal) poison(err error) {
	if j.err == nil {
		j.err = err
	}
	clear(j.pending)
	j.pending, j.pendingBytes = j.pending[:0], 0
	j.done.Broadcast()
}

// run is the committer: it commits whatever is pending whenever someone waits
// for a seq not yet durable, then runs the batch's hooks in seq order before
// taking the next batch, and on Close flushes the rest and returns.
func (j *Journal) run() {
	defer close(j.stopped)
	j.mu.Lock()
	defer j.mu.Unlock()
	for {
		for !j.closed && (j.want <= j.durable || len(j.pending) == 0) {
			j.work.Wait()
		}
		if len(j.pending) == 0 {
			return // closed, and nothing left to write
		}
		if j.hold(); len(j.pending) == 0 {
			continue // fenced or poisoned while it held: nothing is left to commit
		}
		batch, hook, sum := j.pending, j.commitHook, j.summary.Clone()
		j.pending, j.spare, j.pendingBytes = j.spare[:0], nil, 0

		j.mu.Unlock()
		err := j.commit(batch, hook, sum)
		j.mu.Lock()

		if err != nil {
			j.poison(err)
		} else {
			j.durable, j.summary = batch[len(batch)-1].seq, sum
			j.done.Broadcast()
			j.mu.Unlock()
			for _, e := range batch {
				if e.after != nil {
					e.after()
				}
			}
			j.noteCommitted(batch)
			j.mu.Lock()
		}
		clear(batch)
		j.spare = batch[:0]
	}
}

// Expect announces rows on their way to a commit their writer will ask for: a call just
// started, which appends its intent and then waits for it to be durable. Until done is called
// (at the writer's first Sync, or when it finds it has nothing to commit), a commit someone
// asks for waits for it, at most maxHold: the calls a script issues together then share one
// commit and its fsyncs, where the first to ask had one of its own. done may be called more
// than once; a hold that ran out forgets every expectation then announced.
func (j *Journal) Expect() (done func()) {
	j.mu.Lock()
	j.expected++
	gen := j.expectGen
	j.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			j.mu.Lock()
			defer j.mu.Unlock()
			if j.expectGen == gen && j.expected > 0 {
				if j.expected--; j.expected == 0 {
					j.work.Signal()
				}
			}
		})
	}
}

// maxHold bounds how long a commit asked for waits for the rows Expect announced.
const maxHold = 2 * time.Millisecond

// hold waits, before a commit is taken, for the writers Expect announced, at most maxHold.
// Called by the committer with j.mu held, which it lets go while it waits: the journal may be
// fenced or poisoned meanwhile, and its pending rows dropped.
func (j *Journal) hold() {
	if j.expected == 0 || j.closed {
		return
	}
	expired := false
	t := time.AfterFunc(j.maxHold, func() {
		j.mu.Lock()
		expired = true
		j.work.Signal()
		j.mu.Unlock()
	})
	j.holding = true
	for j.expected > 0 && !expired && !j.closed {
		j.work.Wait()
	}
	j.holding = false
	t.Stop()
	if expired {
		// A writer that did not come (it waits for something else first): the others are
		// not held for it again.
		j.expected = 0
		j.expectGen++
	}
}

// commit writes one batch in one bbolt transaction, and folds it into sum, which the same
// transaction stores: the summary never differs from the rows. The batch is durable when it
// returns: by the log's fsync after the transaction (which has none), or by the transaction's
// own fsyncs in a journal that keeps no log.
func (j *Journal) commit(batch []entry, hook func(first, last uint64) error, sum *journal.Summary) error {
	first, last := batch[0].seq, batch[len(batch)-1].seq
	if hook != nil {
		if err := hook(first, last); err != nil {
			return fmt.Errorf("journal: commit rows %d-%d: %w", first, last, err)
		}
	}
	err := j.db.Update(func(tx *bbolt.Tx) error {
		if err := putRows(tx, batch); err != nil {
			return err
		}
		return foldSummary(tx, sum, batch)
	})
	if err == nil && j.log != nil {
		// The file's commit was not fsync'd: the rows are durable once the log is. The file
		// takes them first, so the log never holds a batch the file refused (a key too long
		// for its index); one a crash left in the file and not the log is logged at the next
		// open (logged.go). (The log's fsync run beside bbolt's writes of the file's pages
		// was no faster.)
		err = j.logBatch(batch)
	}
	if err != nil {
		return fmt.Errorf("journal: commit rows %d-%d: %w", first, last, err)
	}
	n := j.commits.Add(1)
	if fn := j.onCommit.Load(); fn != nil {
		(*fn)(n)
	}
	return nil
}

// logBatch appends the batch to the log, fsync'd.
func (j *Journal) logBatch(batch []entry) error {
	rows := make([][]byte, len(batch))
	for i := range batch {
		rows[i] = batch[i].data
	}
	return j.log.Append(batch[0].seq, rows)
}

// OnCommit registers fn to run after each durable commit, before anyone waiting on it wakes,
// with the number of commits this handle has made. It exists for crash tests, which kill the
// process between two commits.
func (j *Journal) OnCommit(fn func(commits uint64)) { j.onCommit.Store(&fn) }

// Fence refuses every write from now on, with err: the process lost its hold on the run, and
// another may write the journal. Rows buffered and not yet committed are dropped.
func (j *Journal) Fence(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.poison(err)
}
