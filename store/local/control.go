package local

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local/journalfile"
)

// The control socket. bbolt locks a journal against every other process while one holds it,
// so the holder serves what readers need on a unix socket in the run's folder (0700: the
// user's alone). A request is one JSON line:
//
//	{"op": "rows", "from": N}  the durable rows from seq N on, one JSON line each, then {"eof": true},
//	                           or {"damaged": WHAT} where a row fails its checksum
//	{"op": "summary"}          the summary of the durable rows, one JSON line
//	{"op": "outstanding", "limit": N}
//	                           the index kept beside it (journal.Outstanding), one JSON line
//	{"op": "cancel"}           look for a stored cancel request now; answers {"ok": true}
//
// Rows are copied out of the journal a chunk at a time, so a slow reader never holds a read
// transaction that a commit would wait for.

type controlRequest struct {
	Op    string `json:"op"`
	From  uint64 `json:"from,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

// rowsChunk is how many rows a read transaction copies for a reader.
const rowsChunk = 512

// errNoHolder: nobody answered on the socket (the holder has just gone).
var errNoHolder = errors.New("no holder answered")

// listen binds the holder's socket, mode 0600; one a dead holder left behind is removed first
// (the run lock is held, so no live process serves it). It returns the socket file as bound.
func listen(path string) (net.Listener, os.FileInfo, error) {
	name, release, err := socketPath(path)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	os.Remove(path)
	ln, err := net.Listen("unix", name)
	if err != nil {
		return nil, nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // Release removes it, by its real path
	// bind gives the socket the umask's mode; like every file of the run it is the user's
	// alone (the folder is 0700 too).
	if err := os.Chmod(name, 0o600); err != nil {
		ln.Close()
		return nil, nil, err
	}
	st, err := os.Lstat(path)
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	return ln, st, nil
}

func (l *lease) serve() {
	defer l.wg.Done()
	for {
		conn, err := l.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return // closed by Release
		}
		if err != nil {
			// Out of descriptors, say: the next reader may be luckier.
			select {
			case <-l.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		l.connMu.Lock()
		select {
		case <-l.stop:
			l.connMu.Unlock()
			conn.Close()
			return
		default:
		}
		l.conns[conn] = struct{}{}
		l.connMu.Unlock()
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.answer(conn)
			l.connMu.Lock()
			delete(l.conns, conn)
			l.connMu.Unlock()
			conn.Close()
		}()
	}
}

// readerTimeout bounds how long a holder waits for a reader, and a reader for the holder,
// between two lines.
const readerTimeout = 10 * time.Second

func (l *lease) answer(conn net.Conn) {
	conn.SetDeadline(time.Now().Add(readerTimeout))
	line, err := bufio.NewReader(io.LimitReader(conn, 4096)).ReadBytes('\n')
	if err != nil {
		return
	}
	var req controlRequest
	if json.Unmarshal(line, &req) != nil {
		return
	}
	w := bufio.NewWriter(conn)
	defer w.Flush()
	switch req.Op {
	case "cancel":
		l.checkCancel()
		w.WriteString(`{"ok":true}` + "\n")
	case "summary":
		sum, err := l.j.Summary()
		if err != nil {
			return // closed: the reader goes to the file
		}
		data, _ := journal.MarshalPlain(sum)
		w.Write(append(data, '\n'))
	case "outstanding":
		out, err := l.j.Outstanding(max(req.Limit, 0))
		if err != nil {
			return // closed: the reader goes to the file
		}
		data, _ := journal.MarshalPlain(out)
		w.Write(append(data, '\n'))
	case "rows":
		from := max(req.From, 1)
		for {
			select {
			case <-l.stop:
				return // no eof: the reader goes to the file
			default:
			}
			chunk, err := l.j.Raw(from, rowsChunk)
			if errors.Is(err, journalfile.ErrCorrupt) {
				// Reading the file instead would find the same damage: say it.
				line, _ := json.Marshal(map[string]string{"damaged": journalfile.Damage(err)})
				w.Write(append(line, '\n'))
				return
			}
			if err != nil {
				return
			}
			for _, raw := range chunk {
				w.Write(raw)
				w.WriteByte('\n')
			}
			conn.SetDeadline(time.Now().Add(readerTimeout))
			from += uint64(len(chunk))
			if len(chunk) < rowsChunk {
				break
			}
		}
		w.WriteString(`{"eof":true}` + "\n")
	}
}

// dial connects to a run's holder.
func (s *Store) dial(ctx context.Context, run string) (net.Conn, error) {
	name, release, err := socketPath(s.path(run, ControlSocket))
	if err != nil {
		return nil, err
	}
	defer release()
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := d.DialContext(dctx, "unix", name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoHolder, err)
	}
	return conn, nil
}

// poke asks a run's holder to look for a cancel request now.
func (s *Store) poke(ctx context.Context, run string) error {
	conn, err := s.dial(ctx, run)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte(`{"op":"cancel"}` + "\n")); err != nil {
		return err
	}
	if pid, stopped := StoppedHolder(s.root, run); stopped {
		return fmt.Errorf("the process that holds the run (pid %d) is stopped", pid)
	}
	_, err = bufio.NewReader(conn).ReadBytes('\n')
	return err
}

// Rows implements store.Store: a held run's rows come from its holder over the socket, a run
// nobody holds is read from its file. A holder that goes (or comes) while rows are read is
// followed: reading goes on from the first row not yet given to fn.
func (s *Store) Rows(ctx context.Context, run string, from uint64, fn func(*journal.Row) error) error {
	return s.RowsPage(ctx, run, from, 0, fn)
}

// RowsPage implements store.PageReader: Rows, stopping after limit rows (0: none), and
// reading a journal no process holds no further than them.
func (s *Store) RowsPage(ctx context.Context, run string, from uint64, limit int, fn func(*journal.Row) error) error {
	if err := s.checkRun(run); err != nil {
		return err
	}
	next, left := max(from, 1), limit
	counted := func(r *journal.Row) error {
		if err := fn(r); err != nil {
			return err
		}
		next = r.Seq + 1
		if left--; left == 0 {
			return errPageRead // 0 only for a page: left is below 0 all along without one
		}
		return nil
	}
	var last error
	for attempt := 0; attempt < 20; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		if Held(s.root, run) {
			err = s.rowsFromHolder(ctx, run, next, counted)
		} else {
			err = s.rowsFromFile(run, next, max(left, 0), counted)
		}
		if errors.Is(err, errPageRead) {
			return nil
		}
		var rowsErr *rowsError
		if !errors.As(err, &rowsErr) {
			return err // nil, or fn's own error
		}
		if !rowsErr.retry {
			return rowsErr.err
		}
		last = rowsErr.err
		time.Sleep(time.Duration(attempt+1) * 5 * time.Millisecond)
	}
	if Held(s.root, run) {
		return errs.New(errs.RunUnavailable, "run %s is held by a process that does not serve its journal", run).Wrap(last).
			Because("store", "holder_unreachable", "unknown", errs.Uncertain).Next("crw flow status " + run)
	}
	return errs.New(errs.RunUnavailable, "run %s: its journal could not be read while its holder came and went", run).Wrap(last)
}

// errPageRead stops a read of a page that has read it all.
var errPageRead = errors.New("page read")

// Summary implements store.Store: a held run's summary comes from its holder over the socket,
// a run nobody holds has it read from its file without the rows. A journal written before
// summaries were kept is summarized from its rows.
func (s *Store) Summary(ctx context.Context, run string) (*journal.Summary, error) {
	return readKept(s, ctx, run, "summary", s.summaryFromHolder,
		func(path string) (*journal.Summary, string, error) { return journalfile.ReadSummary(path) },
		journalfile.ErrNoSummary,
		func() (*journal.Summary, error) {
			return journal.Summarize(func(fn func(*journal.Row) error) error { return s.Rows(ctx, run, 1, fn) })
		})
}

// Outstanding implements store.Store, as Summary does: from the holder, or from the index kept
// in the journal's file; a journal written before the index was kept is folded from its rows.
func (s *Store) Outstanding(ctx context.Context, run string, limit int) (*journal.Outstanding, error) {
	return readKept(s, ctx, run, "index",
		func(ctx context.Context, run string) (*journal.Outstanding, error) {
			return s.outstandingFromHolder(ctx, run, limit)
		},
		func(path string) (*journal.Outstanding, string, error) {
			return journalfile.ReadOutstanding(path, limit)
		},
		journalfile.ErrNoIndex,
		func() (*journal.Outstanding, error) {
			sum, idx, err := journal.SummarizeIndexed(func(fn func(*journal.Row) error) error { return s.Rows(ctx, run, 1, fn) })
			if err != nil {
				return nil, err
			}
			out := idx.Outstanding(limit)
			out.Commits = sum.Commits
			return out, nil
		})
}

// readKept reads what a journal's writer keeps beside its rows (its summary, its index): from
// the run's holder over the socket (holder), or from the file when nobody holds it (file); a
// journal that does not keep it (notKept) has it made from its rows (fromRows).
func readKept[T any](s *Store, ctx context.Context, run, what string, holder func(context.Context, string) (T, error),
	file func(path string) (T, string, error), notKept error, fromRows func() (T, error)) (T, error) {
	var zero T
	if err := s.checkRun(run); err != nil {
		return zero, err
	}
	path := s.path(run, JournalFile)
	var last error
	for attempt := 0; attempt < 20; attempt++ {
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		if Held(s.root, run) {
			v, err := holder(ctx, run)
			if err == nil || !errors.Is(err, errNoHolder) {
				return v, err
			}
			last = err
		} else {
			v, id, err := file(path)
			if err == nil && id != run {
				err = fmt.Errorf("%w: the journal is run %s's", journalfile.ErrSchema, id)
			}
			switch {
			case err == nil:
				return v, nil
			case errors.Is(err, notKept):
				return fromRows()
			case errors.Is(err, journalfile.ErrLocked):
				last = err // a holder has just taken it: ask it
			case errors.Is(err, journalfile.ErrUnrecovered):
				return zero, unrecovered(run, err)
			case errors.Is(err, journalfile.ErrCorrupt), errors.Is(err, journalfile.ErrSchema):
				return zero, damaged(run, path, err)
			case errors.Is(err, os.ErrNotExist):
				return zero, noJournal(run, path)
			default:
				return zero, errs.New(errs.RunUnavailable, "run %s: cannot open the journal %s", run, path).Wrap(err)
			}
		}
		time.Sleep(time.Duration(attempt+1) * 5 * time.Millisecond)
	}
	return zero, errs.New(errs.RunUnavailable, "run %s: its %s could not be read while its holder came and went", run, what).Wrap(last).
		Because("store", "holder_unreachable", "unknown", errs.Uncertain).Next("crw flow status " + run)
}

func (s *Store) summaryFromHolder(ctx context.Context, run string) (*journal.Summary, error) {
	line, err := s.askHolder(ctx, run, controlRequest{Op: "summary"})
	if err != nil {
		return nil, err
	}
	sum := journal.NewSummary()
	if err := json.Unmarshal(line, sum); err != nil {
		return nil, errs.New(errs.IncompatibleSchema, "run %s: its holder sent a summary that does not read", run).Wrap(err)
	}
	if sum.Calls == nil {
		sum.Calls = map[journal.CallStatus]int{}
	}
	return sum, nil
}

// askHolder sends the run's holder one request and returns its one line of answer; errNoHolder
// when nobody answered (the holder has just gone: the file is read instead).
func (s *Store) askHolder(ctx context.Context, run string, req controlRequest) ([]byte, error) {
	conn, err := s.dial(ctx, run)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	conn.SetDeadline(time.Now().Add(readerTimeout))
	data, _ := json.Marshal(req)
	if _, err := conn.Write(append(data, '\n')); err != nil {
		return nil, fmt.Errorf("%w: %v", errNoHolder, err)
	}
	line, err := s.holderLine(ctx, conn, bufio.NewReader(conn), run)
	var e *errs.Error
	if errors.As(err, &e) && ctx.Err() == nil {
		return nil, err // stopped, or not answering
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoHolder, err)
	}
	return line, nil
}

func (s *Store) outstandingFromHolder(ctx context.Context, run string, limit int) (*journal.Outstanding, error) {
	line, err := s.askHolder(ctx, run, controlRequest{Op: "outstanding", Limit: limit})
	if err != nil {
		return nil, err
	}
	out := &journal.Outstanding{}
	if err := json.Unmarshal(line, out); err != nil {
		return nil, errs.New(errs.IncompatibleSchema, "run %s: its holder sent an index that does not read", run).Wrap(err)
	}
	return out, nil
}

// rowsError is a failure of the store itself while reading rows, as opposed to fn's error;
// retry says whether reading again (from the other side) may help.
type rowsError struct {
	err   error
	retry bool
}

func (e *rowsError) Error() string { return e.err.Error() }

func (s *Store) rowsFromHolder(ctx context.Context, run string, from uint64, fn func(*journal.Row) error) error {
	conn, err := s.dial(ctx, run)
	if err != nil {
		return &rowsError{err: err, retry: true}
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	req, _ := json.Marshal(controlRequest{Op: "rows", From: from})
	if _, err := conn.Write(append(req, '\n')); err != nil {
		return &rowsError{err: err, retry: true}
	}
	br := bufio.NewReaderSize(conn, 1<<16)
	want := from
	var r journal.Row // every row is decoded into it: fn keeps none
	for {
		line, err := s.holderLine(ctx, conn, br, run)
		var e *errs.Error
		if errors.As(err, &e) && ctx.Err() == nil {
			// A holder that is stopped (SIGSTOP, a suspended terminal) or stuck: say so rather
			// than wait for it.
			return &rowsError{err: err}
		}
		if err != nil {
			// The holder went before its last line: what is missing is in the file now.
			return &rowsError{err: fmt.Errorf("%w: %v", errNoHolder, err), retry: true}
		}
		if string(line) == `{"eof":true}`+"\n" {
			return nil
		}
		if bytes.HasPrefix(line, []byte(`{"damaged":`)) {
			var d struct{ Damaged string }
			_ = json.Unmarshal(line, &d)
			return &rowsError{err: damaged(run, s.path(run, JournalFile), fmt.Errorf("%w: %s", journalfile.ErrCorrupt, d.Damaged))}
		}
		if err := journal.DecodeInto(line, &r, want); err != nil {
			return &rowsError{err: errs.New(errs.IncompatibleSchema, "run %s: its holder sent row %d that does not read", run, want)}
		}
		if err := fn(&r); err != nil {
			return err
		}
		want++
	}
}

func (s *Store) rowsFromFile(run string, from uint64, limit int, fn func(*journal.Row) error) error {
	path := s.path(run, JournalFile)
	j, err := journalfile.OpenReader(path)
	if err == nil && j.RunID() != run {
		j.Close()
		err = fmt.Errorf("%w: the journal is run %s's", journalfile.ErrSchema, j.RunID())
	}
	switch {
	case errors.Is(err, journalfile.ErrLocked):
		return &rowsError{err: err, retry: true} // a holder has just taken it: ask it
	case errors.Is(err, journalfile.ErrUnrecovered):
		return &rowsError{err: unrecovered(run, err)}
	case errors.Is(err, journalfile.ErrCorrupt), errors.Is(err, journalfile.ErrSchema):
		return &rowsError{err: damaged(run, path, err)}
	case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ENOENT):
		return &rowsError{err: noJournal(run, path)}
	case err != nil:
		return &rowsError{err: errs.New(errs.RunUnavailable, "run %s: cannot open the journal %s", run, path).Wrap(err)}
	}
	defer j.Close()
	var fnErr error
	err = j.Each(from, limit, func(r *journal.Row) error {
		fnErr = fn(r)
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return &rowsError{err: damaged(run, path, err)}
	}
	return nil
}

// noJournal is the error of a run whose folder has its spec and no journal.
func noJournal(run, path string) error {
	return errs.New(errs.IncompatibleSchema, "run %s has no journal: %s is missing", run, path).
		Because("store", "journal_missing", "not_started", errs.Certain).Next("crw flow delete " + run)
}

// unrecovered is the error of a journal a reader may not trust yet: the machine restarted while
// it was being written, and the resume that goes on with the run makes it again from its log.
func unrecovered(run string, err error) error {
	return errs.New(errs.RunUnavailable, "run %s: the machine restarted while its journal was being written; resuming it recovers the journal from its log first", run).Wrap(err).
		Because("store", "journal_unrecovered", "not_started", errs.Certain).Next("crw flow resume " + run)
}

// damaged is the error of a journal that is damaged: it names the file and the damage, and it
// says the file was left as it was.
func damaged(run, path string, err error) error {
	what := journalfile.Damage(err)
	if what == "" {
		what = "it does not read"
	}
	return errs.New(errs.IncompatibleSchema, "run %s: the journal %s is damaged and was left as it is: %s", run, path, what).Wrap(err).
		Because("store", "journal_damaged", "not_started", errs.Certain).Next("keep the file for inspection; the run cannot go on from it")
}
