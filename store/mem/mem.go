// Package mem is a store that keeps everything in memory, for tests: it lives as long as its
// process, and the engines of that process share it as processes share a state folder. Its
// journals keep what a disk journal keeps (rows are durable only once committed, in groups),
// so a test can end a holder at any commit (Crash) and go on with another, as a process killed
// between two commits would leave a run.
package mem

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/locked"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Store is an in-memory store.
type Store struct {
	mu      sync.Mutex
	runs    map[string]*run
	files   map[string][]byte
	records map[string]map[string][]byte // scope ("" or a run) + "/" + kind → key → value
	logs    map[string]*bytes.Buffer
	tokens  int
	// Dir, when set, is a folder whose <run> subfolder a lease gives as the run's (Lease.Dir):
	// where the runner keeps the run's worktrees. "" keeps no folder.
	Dir string
}

var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{runs: map[string]*run{}, files: map[string][]byte{}, records: map[string]map[string][]byte{}, logs: map[string]*bytes.Buffer{}}
}

type run struct {
	answers    []store.Answer
	spec       []byte // the spec as JSON: nobody can change it through a pointer
	rows       [][]byte
	summary    *journal.Summary  // of rows, folded by each commit
	calls      *journal.MemIndex // the summary's call states and what is outstanding
	published  *store.Status
	cancel     bool
	holder     *lease
	crashAfter uint64                  // the next holder's journal ends it after this many commits (0: never)
	crashAtRow func(*journal.Row) bool // or after the commit that stores a row this holds for
	commits    uint64                  // the commits every holder of the run made
}

func (s *Store) get(id string) (*run, error) {
	if !journal.ValidRunID(id) {
		return nil, errs.New(errs.InvalidRequest, "%q is not a run id (like 20261130-052301-a1b2c3)", id)
	}
	r := s.runs[id]
	if r == nil {
		return nil, errs.New(errs.InvalidRequest, "no run %s in the store", id).Wrap(store.ErrNoRun)
	}
	return r, nil
}

// Close implements store.Store.
func (s *Store) Close() error { return nil }

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, spec *store.Spec) error {
	if !journal.ValidRunID(spec.Run) {
		return errs.New(errs.InvalidRequest, "%q is not a run id", spec.Run)
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return errs.New(errs.InvalidRequest, "run %s: its spec is not JSON", spec.Run).Wrap(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs[spec.Run] != nil {
		return errs.New(errs.InvalidRequest, "run %s exists already", spec.Run).Wrap(store.ErrExists)
	}
	s.runs[spec.Run] = &run{spec: data, summary: journal.NewSummary(), calls: journal.NewMemIndex()}
	return nil
}

// Spec implements store.Store.
func (s *Store) Spec(ctx context.Context, id string) (*store.Spec, error) {
	s.mu.Lock()
	r, err := s.get(id)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var spec store.Spec
	if err := json.Unmarshal(r.spec, &spec); err != nil {
		return nil, errs.New(errs.IncompatibleSchema, "run %s: its spec does not read", id).Wrap(err)
	}
	spec.Upgrade()
	return &spec, nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.runs))
	for id := range s.runs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, id string, cleanup func(dir string) error) error {
	s.mu.Lock()
	r, err := s.get(id)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	if r.holder != nil {
		s.mu.Unlock()
		return errs.New(errs.RunUnavailable, "run %s is held by a live process: cancel it first", id).Wrap(store.ErrHeld)
	}
	if cleanup != nil {
		// The run is held against every process while cleanup runs, outside the store's lock.
		deleting := &lease{s: s, id: id}
		r.holder = deleting
		s.mu.Unlock()
		dir := ""
		if s.Dir != "" {
			dir = filepath.Join(s.Dir, id)
		}
		err := cleanup(dir)
		s.mu.Lock()
		r.holder = nil
		if err != nil {
			s.mu.Unlock()
			return err
		}
	}
	defer s.mu.Unlock()
	delete(s.runs, id)
	prefix := id + "/"
	for scope := range s.records {
		if strings.HasPrefix(scope, prefix) {
			delete(s.records, scope)
		}
	}
	delete(s.logs, id)
	return nil
}

// Published implements store.Store.
func (s *Store) Published(ctx context.Context, id string) (*store.Status, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return nil, false, err
	}
	var st *store.Status
	if r.published != nil {
		cp := *r.published
		st = &cp
	}
	return st, r.holder != nil, nil
}

// Rows implements store.Store: the durable rows, held or not.
func (s *Store) Rows(ctx context.Context, id string, from uint64, fn func(*journal.Row) error) error {
	s.mu.Lock()
	r, err := s.get(id)
	var raw [][]byte
	if err == nil && from <= uint64(len(r.rows)) {
		raw = append(raw, r.rows[max(from, 1)-1:]...)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	var row journal.Row
	for i, b := range raw {
		if err := journal.DecodeInto(b, &row, max(from, 1)+uint64(i)); err != nil {
			return errs.New(errs.IncompatibleSchema, "run %s: row %d does not read", id, int(max(from, 1))+i).Wrap(err)
		}
		err := fn(&row)
		// Every row is read into the same Row, as the contract allows: one that fn kept without
		// copying it reads as this, not as the row it was.
		row = journal.Row{Type: "reused", Call: "reused"}
		if err != nil {
			return err
		}
	}
	return nil
}

// Outstanding implements store.Store.
func (s *Store) Outstanding(ctx context.Context, id string, limit int) (*journal.Outstanding, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return nil, err
	}
	out := r.calls.Outstanding(limit)
	out.Commits = slices.Clone(r.summary.Commits)
	return out, nil
}

// Summary implements store.Store.
func (s *Store) Summary(ctx context.Context, id string) (*journal.Summary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return nil, err
	}
	return r.summary.Clone(), nil
}

// RequestCancel implements store.Store.
func (s *Store) RequestCancel(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return err
	}
	r.cancel = true
	if r.holder != nil {
		r.holder.cancelOnce.Do(func() { close(r.holder.cancelled) })
	}
	return nil
}

// PutAnswer implements store.Store.
func (s *Store) PutAnswer(ctx context.Context, id string, a store.Answer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return err
	}
	r.answers = append(r.answers, a)
	return nil
}

// PutFile implements store.Store.
func (s *Store) PutFile(ctx context.Context, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[digest] = append([]byte(nil), data...)
	return digest, nil
}

// File implements store.Store.
func (s *Store) File(ctx context.Context, digest string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.files[digest]
	if !ok {
		return nil, errs.New(errs.RunUnavailable, "no file %s in the store", digest).Wrap(store.ErrNotFound)
	}
	return append([]byte(nil), data...), nil
}

// Log implements store.Store.
func (s *Store) Log(id string) store.Log { return &memLog{s: s, run: id} }

type memLog struct {
	s   *Store
	run string
}

func (l *memLog) Name() string { return "memory log " + l.run }

func (l *memLog) Append(line []byte) error {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	b := l.s.logs[l.run]
	if b == nil {
		b = &bytes.Buffer{}
		l.s.logs[l.run] = b
	}
	b.Write(bytes.TrimRight(line, "\n"))
	b.WriteByte('\n')
	return nil
}

// Size implements store.Log.
func (l *memLog) Size() (int64, error) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if b := l.s.logs[l.run]; b != nil {
		return int64(b.Len()), nil
	}
	return 0, nil
}

// Read implements store.Log.
func (l *memLog) Read(offset int64, max int) ([]byte, int64, error) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	b := l.s.logs[l.run]
	if b == nil {
		return nil, offset, nil
	}
	return store.WholeLines(bytes.NewReader(b.Bytes()), int64(b.Len()), offset, max)
}

// LogText is what a run's log holds ("" for the store's own).
func (s *Store) LogText(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.logs[id]; b != nil {
		return b.String()
	}
	return ""
}

// Records implements store.Store.
func (s *Store) Records(id string, kind store.Kind) store.Records {
	return &records{s: s, run: id, scope: id + "/" + string(kind)}
}

type records struct {
	s     *Store
	run   string
	scope string
}

// check refuses a bad key and a run that does not exist; it is called with s.mu held.
func (r *records) check(key string) error {
	if !store.ValidKey(key) {
		return errs.New(errs.InvalidRequest, "%q is not a record key (1 to 128 of A-Z a-z 0-9 . _ -)", key)
	}
	return r.checkRun()
}

func (r *records) checkRun() error {
	if r.run != "" {
		_, err := r.s.get(r.run)
		return err
	}
	return nil
}

func (r *records) Put(ctx context.Context, key string, value []byte) error {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if err := r.check(key); err != nil {
		return err
	}
	m := r.s.records[r.scope]
	if m == nil {
		m = map[string][]byte{}
		r.s.records[r.scope] = m
	}
	m[key] = append([]byte(nil), value...)
	return nil
}

func (r *records) Create(ctx context.Context, key string, value []byte) error {
	r.s.mu.Lock()
	exists := r.check(key) == nil && r.s.records[r.scope][key] != nil
	r.s.mu.Unlock()
	if exists {
		return errs.New(errs.IdempotencyConflict, "record %s exists already", key).Wrap(store.ErrExists)
	}
	return r.Put(ctx, key, value)
}

func (r *records) Get(ctx context.Context, key string) ([]byte, error) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if err := r.check(key); err != nil {
		return nil, err
	}
	v, ok := r.s.records[r.scope][key]
	if !ok {
		return nil, errs.New(errs.InvalidRequest, "no record %s", key).Wrap(store.ErrNotFound)
	}
	return append([]byte(nil), v...), nil
}

func (r *records) List(ctx context.Context, prefix string) ([]store.Record, error) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if err := r.checkRun(); err != nil {
		return nil, err
	}
	var out []store.Record
	for k, v := range r.s.records[r.scope] {
		if strings.HasPrefix(k, prefix) {
			out = append(out, store.Record{Key: k, Value: append([]byte(nil), v...)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (r *records) Delete(ctx context.Context, key string) error {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if err := r.check(key); err != nil {
		return err
	}
	delete(r.s.records[r.scope], key)
	return nil
}

// Acquire implements store.Store.
func (s *Store) Acquire(ctx context.Context, id string) (store.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return nil, err
	}
	if r.holder != nil {
		return nil, errs.New(errs.RunUnavailable, "run %s is held by another live process", id).Wrap(store.ErrHeld)
	}
	s.tokens++
	l := &lease{s: s, r: r, id: id, token: fmt.Sprintf("mem%d", s.tokens),
		cancelled: make(chan struct{}), lost: make(chan struct{}), crashAfter: r.crashAfter, crashAtRow: r.crashAtRow}
	l.j = &memJournal{l: l, next: uint64(len(r.rows)), durable: uint64(len(r.rows))}
	r.holder = l
	r.crashAfter, r.crashAtRow = 0, nil
	if r.cancel {
		close(l.cancelled)
		l.cancelOnce.Do(func() {})
	}
	return l, nil
}

// CrashAfterCommit makes the next holder of a run lose its lease right after its journal's
// nth commit, as a process killed there would: what it buffered is gone, and it can write
// nothing more. A test then goes on with another holder.
func (s *Store) CrashAfterCommit(id string, n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.runs[id]; r != nil {
		r.crashAfter = n
	}
}

// CrashAfterRow makes the next holder of a run lose its lease right after the commit that
// stores the first row at holds for, as a process killed there would: a test that needs the
// journal to end at one row gets it whatever the order the commits before it came in.
func (s *Store) CrashAfterRow(id string, at func(*journal.Row) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.runs[id]; r != nil {
		r.crashAtRow = at
	}
}

// Commits is how many journal commits the holders of a run have made: where a test may end
// a holder (CrashAfterCommit) to have it end within the run.
func (s *Store) Commits(id string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.runs[id]; r != nil {
		return r.commits
	}
	return 0
}

// Revoke takes a run's lease from its holder, as an expired lease would.
func (s *Store) Revoke(id string) {
	s.mu.Lock()
	r := s.runs[id]
	var l *lease
	if r != nil {
		l = r.holder
	}
	s.mu.Unlock()
	if l != nil {
		l.lose()
	}
}

type lease struct {
	s          *Store
	r          *run
	id, token  string
	j          *memJournal
	crashAfter uint64
	crashAtRow func(*journal.Row) bool

	cancelOnce, lostOnce, releaseOnce sync.Once
	cancelled, lost                   chan struct{}
}

var _ store.Lease = (*lease)(nil)

func (l *lease) Run() string            { return l.id }
func (l *lease) Token() string          { return l.token }
func (l *lease) Journal() store.Journal { return l.j }
func (l *lease) Dir() string {
	if l.s.Dir == "" {
		return ""
	}
	return filepath.Join(l.s.Dir, l.id)
}
func (l *lease) Cancelled() <-chan struct{} { return l.cancelled }

// TakeAnswers implements store.Lease.
func (l *lease) TakeAnswers() ([]store.Answer, error) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	out := l.r.answers
	l.r.answers = nil
	return out, nil
}
func (l *lease) Lost() <-chan struct{} { return l.lost }

func (l *lease) Publish(st *store.Status) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.r.holder != l {
		return
	}
	cp := *st
	l.r.published = &cp
}

// lose ends the lease: the journal is fenced, what it buffered is dropped, and the run is
// free for another holder.
func (l *lease) lose() {
	l.lostOnce.Do(func() {
		l.j.fence(fmt.Errorf("journal: %w", store.ErrLeaseLost))
		l.s.mu.Lock()
		if l.r.holder == l {
			l.r.holder = nil
		}
		l.s.mu.Unlock()
		close(l.lost)
	})
}

func (l *lease) Release() error {
	var err error
	l.releaseOnce.Do(func() {
		err = l.j.close()
		l.s.mu.Lock()
		if l.r.holder == l {
			l.r.holder = nil
		}
		l.s.mu.Unlock()
	})
	return err
}

// memJournal is a run's journal as its holder writes it: appended rows wait in memory until a
// commit, which moves everything appended so far into the store at once.
type memJournal struct {
	l        *lease
	commitMu sync.Mutex // one commit at a time, in seq order
	mu       sync.Mutex
	next     uint64
	durable  uint64
	pending  [][]byte
	parts    []journal.SummaryPart // what the summary's fold reads of the pending rows
	commits  uint64
	err      error
	closed   bool
}

func (j *memJournal) Append(rows ...*journal.Row) uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil || j.closed {
		return 0
	}
	now := time.Now().UTC()
	for _, r := range rows {
		j.next++
		r.Seq = j.next
		if r.At.IsZero() {
			r.At = now
		}
		data, err := journal.Encode(r)
		if err != nil {
			j.err = fmt.Errorf("journal: encode row %d (%s): %w", r.Seq, r.Type, err)
			j.pending, j.parts = nil, nil
			return 0
		}
		j.pending = append(j.pending, data)
		j.parts = append(j.parts, r.ForSummary())
	}
	return j.next
}

func (j *memJournal) Sync(seq uint64) error {
	j.commitMu.Lock()
	defer j.commitMu.Unlock()
	j.mu.Lock()
	switch {
	case j.err != nil:
		err := j.err
		j.mu.Unlock()
		return err
	case seq <= j.durable:
		j.mu.Unlock()
		return nil
	case seq > j.next:
		j.mu.Unlock()
		return fmt.Errorf("journal: sync %d: only %d rows were appended", seq, j.next)
	}
	batch, parts := j.pending, j.parts
	j.pending, j.parts = nil, nil
	j.mu.Unlock()
	return j.commit(batch, parts)
}

// commit stores a batch and folds it into the run's summary: one commit, as one bbolt
// transaction would be.
func (j *memJournal) commit(batch [][]byte, parts []journal.SummaryPart) error {
	j.l.s.mu.Lock()
	if j.l.r.holder != j.l {
		j.l.s.mu.Unlock()
		return fmt.Errorf("journal: %w", store.ErrLeaseLost)
	}
	j.l.r.rows = append(j.l.r.rows, batch...)
	for i := range parts {
		_ = j.l.r.summary.Add(parts[i], j.l.r.calls) // in memory, it cannot fail
	}
	stored := uint64(len(j.l.r.rows))
	j.l.r.commits++
	j.l.s.mu.Unlock()

	j.mu.Lock()
	j.durable = max(j.durable, stored)
	j.commits++
	crash := j.l.crashAfter != 0 && j.commits == j.l.crashAfter
	j.mu.Unlock()
	if at := j.l.crashAtRow; at != nil {
		for i, data := range batch {
			var r journal.Row
			if journal.DecodeInto(data, &r, stored-uint64(len(batch)-i)+1) == nil && at(&r) {
				crash = true
				break
			}
		}
	}
	if crash {
		j.l.lose()
	}
	return nil
}

func (j *memJournal) Write(rows ...*journal.Row) (uint64, error) {
	seq := j.Append(rows...)
	if seq == 0 && len(rows) > 0 {
		return 0, j.error()
	}
	if err := j.Sync(seq); err != nil {
		return 0, err
	}
	return seq, nil
}

func (j *memJournal) error() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		return fmt.Errorf("journal: closed")
	}
	return j.err
}

func (j *memJournal) LastSeq() uint64 { return locked.Read(&j.mu, &j.next) }

func (j *memJournal) DurableSeq() uint64 { return locked.Read(&j.mu, &j.durable) }

func (j *memJournal) Rows() ([]journal.Row, error) {
	j.l.s.mu.Lock()
	raw := append([][]byte(nil), j.l.r.rows...)
	j.l.s.mu.Unlock()
	return journal.DecodeRows(raw)
}

func (j *memJournal) Page(from uint64, limit int) ([]journal.Row, error) {
	from = max(from, 1)
	j.l.s.mu.Lock()
	var raw [][]byte
	if n := uint64(len(j.l.r.rows)); limit > 0 && from <= n {
		raw = append(raw, j.l.r.rows[from-1:min(n, from-1+uint64(limit))]...)
	}
	j.l.s.mu.Unlock()
	return journal.DecodeRowsFrom(raw, from)
}

func (j *memJournal) Each(from uint64, limit int, fn func(*journal.Row) error) error {
	from = max(from, 1)
	j.l.s.mu.Lock()
	var raw [][]byte
	if n := uint64(len(j.l.r.rows)); from <= n {
		to := n
		if limit > 0 {
			to = min(n, from-1+uint64(limit))
		}
		raw = append(raw, j.l.r.rows[from-1:to]...)
	}
	j.l.s.mu.Unlock()
	var row journal.Row
	for i, data := range raw {
		if err := journal.DecodeInto(data, &row, from+uint64(i)); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		err := fn(&row)
		row = journal.Row{Type: "reused", Call: "reused"} // as Rows does
		if err != nil {
			return err
		}
	}
	return nil
}

func (j *memJournal) fence(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		j.err = err
	}
	j.pending, j.parts = nil, nil
}

// close commits what is buffered, unless the journal was fenced.
func (j *memJournal) close() error {
	j.commitMu.Lock()
	defer j.commitMu.Unlock()
	j.mu.Lock()
	if j.err != nil {
		j.closed = true
		j.mu.Unlock()
		return nil
	}
	batch, parts := j.pending, j.parts
	j.pending, j.parts = nil, nil
	j.closed = true
	j.mu.Unlock()
	if len(batch) > 0 {
		return j.commit(batch, parts)
	}
	return nil
}
