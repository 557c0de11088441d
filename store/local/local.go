// Package local is crw's default store: every run is a folder under a state folder.
//
//	<state>/flow/<run>/run.json             the spec, written once (temporary name, fsync, rename)
//	<state>/flow/<run>/journal.db           the journal: a bbolt file (store/local/journalfile)
//	<state>/flow/<run>/run.lock             flock'd by the process that holds the run: the lease
//	<state>/flow/<run>/process.<token>.lock flock'd by that process from before it takes run.lock
//	                                        until after it lets it go; a killed process's is
//	                                        removed by the run's next holder
//	<state>/flow/<run>/state.json           the status its holder publishes
//	<state>/flow/<run>/control.sock         its holder's socket: readers get the journal's rows
//	                                        there, since bbolt locks the file against them
//	<state>/flow/<run>/cancel.json          a stored cancel request
//	<state>/flow/<run>/crw.log              the full account of the run's errors
//	<state>/flow/<run>/<kind>/<key>.json    the run's records (decisions, inbox, replies)
//	<state>/<kind>/<key>.json               the store's records (audit, idempotency)
//	<state>/files/sha256-<hex>              files by digest
//	<state>/crw.log                         the full account of errors that belong to no run
//
// Folders are made 0700 and files 0600: they hold prompts and answers.
//
// It is over 1,500 lines because it is the whole of the local store contract (runs, leases
// with their process locks, published status, answers, files, records, logs) over one state
// folder, each part a file of its own.
package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local/journalfile"
	"github.com/crw-dev/crw/userfile"
)

// Files of a run's folder.
const (
	SpecFile    = "run.json"
	StateFile   = "state.json"
	JournalFile = "journal.db"
	// JournalLog is the journal's log (rowlog.Path of JournalFile): each commit's rows,
	// fsync'd there before the journal file takes them.
	JournalLog    = "journal.db-log"
	RunLockFile   = "run.lock"
	CancelFile    = "cancel.json"
	ControlSocket = "control.sock"
	LogFile       = "crw.log"
)

// StateSchema is the schema of state.json.
const StateSchema = "crw-flow-state/1"

// Store is a state folder.
type Store struct {
	root string

	crashMu sync.Mutex
	// crashAfter: the next lease of a run this Store gives loses its holding after this many
	// commits of its journal (CrashAfterCommit).
	crashAfter map[string]uint64
}

var _ store.Store = (*Store)(nil)

// New returns the store of the state folder root (made absolute). Nothing is created until a
// run is.
func New(root string) (*Store, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, errs.New(errs.InvalidRequest, "state folder %s: %v", root, err)
	}
	return &Store{root: abs}, nil
}

// Root is the state folder.
func (s *Store) Root() string { return s.root }

// RunDir is the folder of a run.
func (s *Store) RunDir(run string) string { return filepath.Join(s.root, "flow", run) }

func (s *Store) path(run, name string) string { return filepath.Join(s.RunDir(run), name) }

// checkRun refuses an id that is not a run id (it would name a path) and a run that does not
// exist.
func (s *Store) checkRun(run string) error {
	if !journal.ValidRunID(run) {
		return errs.New(errs.InvalidRequest, "%q is not a run id (like 20261130-052301-a1b2c3)", run)
	}
	if _, err := os.Stat(s.path(run, SpecFile)); err != nil {
		return notFound(run, s.root)
	}
	return nil
}

// notFound is a run id that names no run: bad input, naming the state folder looked in.
func notFound(run, root string) error {
	return errs.New(errs.InvalidRequest, "no run %s in the state folder %s", run, root).Wrap(store.ErrNoRun).
		Next("crw flow list names the runs there; --state DIR (or CRW_STATE) names another folder")
}

// Close implements store.Store.
func (s *Store) Close() error { return nil }

// Create implements store.Store: the folder and an empty journal first, run.json last, so a
// folder without run.json is no run (and List skips it).
func (s *Store) Create(ctx context.Context, spec *store.Spec) error {
	if !journal.ValidRunID(spec.Run) {
		return errs.New(errs.InvalidRequest, "%q is not a run id", spec.Run)
	}
	if err := os.MkdirAll(filepath.Join(s.root, "flow"), 0o700); err != nil {
		return unwritable(s.root, err)
	}
	dir := s.RunDir(spec.Run)
	if _, err := os.Lstat(dir); err == nil {
		return errs.New(errs.InvalidRequest, "run %s exists already", spec.Run).Wrap(store.ErrExists)
	}
	// The run's folder is made whole under another name and renamed into place, so a process
	// killed while it creates a run leaves no run folder without its spec or journal: only a
	// ".creating-" folder, which is not a run and which the next create removes.
	s.removeStaleCreates()
	tmp := filepath.Join(s.root, "flow", ".creating-"+spec.Run+"-"+randomToken())
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return unwritable(tmp, err)
	}
	j, err := journalfile.Create(filepath.Join(tmp, JournalFile), spec.Run)
	if err == nil {
		err = j.Close()
	}
	if err == nil {
		err = writeJSON(filepath.Join(tmp, SpecFile), spec, true)
	}
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err == nil {
		err = journalfile.SyncDir(filepath.Join(s.root, "flow"))
	}
	if err != nil {
		os.RemoveAll(tmp)
		return unwritable(dir, err)
	}
	return nil
}

// staleCreate is how old a ".creating-" folder must be to count as left by a killed process.
const staleCreate = time.Hour

// removeStaleCreates removes the ".creating-" folders of creates that died long ago.
func (s *Store) removeStaleCreates() {
	flow := filepath.Join(s.root, "flow")
	entries, err := os.ReadDir(flow)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), ".creating-") {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleCreate {
			os.RemoveAll(filepath.Join(flow, e.Name()))
		}
	}
}

// unwritable is a store that cannot write: a dependency failure, nothing started.
func unwritable(where string, err error) error {
	return errs.New(errs.CapabilityUnavailable, "cannot write below %s", where).Wrap(err).
		Because("store", "store_unwritable", "not_started", errs.Certain).Next("check the state folder's space and permissions")
}

// Spec implements store.Store.
func (s *Store) Spec(ctx context.Context, run string) (*store.Spec, error) {
	if err := s.checkRun(run); err != nil {
		return nil, err
	}
	var spec store.Spec
	path := s.path(run, SpecFile)
	if err := readJSON(path, &spec); err != nil {
		return nil, err
	}
	if spec.Schema != store.SpecSchema {
		return nil, errs.New(errs.IncompatibleSchema, "%s: schema %q, want %q", path, spec.Schema, store.SpecSchema)
	}
	spec.Upgrade()
	spec.Path = path
	return &spec, nil
}

// List implements store.Store: run ids sort by their start time.
func (s *Store) List(ctx context.Context) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(s.root, "flow"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.New(errs.CapabilityUnavailable, "cannot read %s", filepath.Join(s.root, "flow")).Wrap(err)
	}
	var ids []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), deletedPrefix) {
			// A delete (or a prune) that died after it renamed the run away: finish it.
			_ = os.RemoveAll(filepath.Join(s.root, "flow", e.Name()))
			continue
		}
		if e.IsDir() && journal.ValidRunID(e.Name()) {
			if _, err := os.Stat(s.path(e.Name(), SpecFile)); err == nil {
				ids = append(ids, e.Name())
			}
		}
	}
	return ids, nil
}

// stateFile is state.json: the published status, with its schema.
type stateFile struct {
	Schema string `json:"schema"`
	*store.Status
}

// Published implements store.Store.
func (s *Store) Published(ctx context.Context, run string) (*store.Status, bool, error) {
	if err := s.checkRun(run); err != nil {
		return nil, false, err
	}
	held := Held(s.root, run)
	f := stateFile{Status: &store.Status{}}
	if err := readJSON(s.path(run, StateFile), &f); err != nil {
		// Nothing published, or a file a killed holder left half written (it is not
		// fsynced): the journal is the record, and readers go by it.
		return nil, held, nil
	}
	return f.Status, held, nil
}

// AnswersDir is the folder of a run's answers that wait for its process (PutAnswer).
const AnswersDir = "answers"

// MaxAnswers bounds the answers that may wait in a run's folder.
const MaxAnswers = 256

// PutAnswer implements store.Store: the answer is a file of the run's answers folder, written
// durably under a temporary name and renamed; the holder is told through its socket.
func (s *Store) PutAnswer(ctx context.Context, run string, a store.Answer) error {
	if err := s.checkRun(run); err != nil {
		return err
	}
	dir := s.path(run, AnswersDir)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return unwritable(s.RunDir(run), err)
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) >= MaxAnswers {
		return errs.New(errs.RunUnavailable, "run %s has %d answers waiting for its process already", run, len(entries))
	}
	if err := writeJSON(filepath.Join(dir, randomToken()+".json"), a, true); err != nil {
		return unwritable(s.RunDir(run), err)
	}
	if Held(s.root, run) {
		_ = s.poke(ctx, run)
	}
	return nil
}

// RequestCancel implements store.Store: cancel.json is written (durably), then a holder is
// told through its socket; it also looks for the file every little while.
func (s *Store) RequestCancel(ctx context.Context, run string) error {
	if err := s.checkRun(run); err != nil {
		return err
	}
	if err := writeJSON(s.path(run, CancelFile), map[string]any{"requested": true, "pid": os.Getpid()}, true); err != nil {
		return unwritable(s.RunDir(run), err)
	}
	if Held(s.root, run) {
		_ = s.poke(ctx, run)
	}
	return nil
}

// Delete implements store.Store: the run's lock is taken first, so a held run is refused; the
// folder is renamed away at once and then removed.
func (s *Store) Delete(ctx context.Context, run string, cleanup func(dir string) error) error {
	if err := s.checkRun(run); err != nil {
		return err
	}
	lock, err := flockFile(s.path(run, RunLockFile))
	if err != nil {
		if isWouldBlock(err) {
			return errs.New(errs.RunUnavailable, "run %s is held by a live process: cancel it first", run).Wrap(store.ErrHeld)
		}
		return unwritable(s.RunDir(run), err)
	}
	defer lock.Close()
	if cleanup != nil {
		if err := cleanup(s.RunDir(run)); err != nil {
			return err
		}
	}
	gone := filepath.Join(s.root, "flow", deletedPrefix+run+"-"+randomToken())
	if err := os.Rename(s.RunDir(run), gone); err != nil {
		return unwritable(s.RunDir(run), err)
	}
	if err := os.RemoveAll(gone); err != nil {
		return unwritable(gone, err)
	}
	return s.sweepDeleted()
}

// deletedPrefix names a run's folder renamed away by a delete, to be removed.
const deletedPrefix = ".deleted-"

// sweepDeleted removes what deletes that died part-way left: a folder renamed away and not
// yet removed is no run any more, and nothing else would ever remove it.
func (s *Store) sweepDeleted() error {
	entries, err := os.ReadDir(filepath.Join(s.root, "flow"))
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), deletedPrefix) {
			path := filepath.Join(s.root, "flow", e.Name())
			if err := os.RemoveAll(path); err != nil {
				return unwritable(path, err)
			}
		}
	}
	return nil
}

// PutFile implements store.Store.
func (s *Store) PutFile(ctx context.Context, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	dir := filepath.Join(s.root, "files")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", unwritable(dir, err)
	}
	path := filepath.Join(dir, "sha256-"+hex.EncodeToString(sum[:]))
	if _, err := os.Stat(path); err == nil {
		// Touched: a collection (CollectFiles) spares what a run being created has just put.
		now := time.Now()
		_ = os.Chtimes(path, now, now)
		if _, err := os.Stat(path); err == nil {
			return digest, nil
		}
	}
	if err := writeFile(path, data, true); err != nil {
		return "", unwritable(dir, err)
	}
	return digest, nil
}

// CollectFiles implements store.FileCollector: it removes the files (workflow sources by
// digest) no run's spec names any more, put longer than grace ago (a run being created puts
// its files before its spec). It returns how many it removed.
func (s *Store) CollectFiles(ctx context.Context, grace time.Duration) (int, error) {
	ids, err := s.List(ctx)
	if err != nil {
		return 0, err
	}
	named := map[string]bool{}
	for _, id := range ids {
		spec, err := s.Spec(ctx, id)
		if err != nil {
			return 0, nil // a spec that cannot be read may name any file: keep them all
		}
		for _, digest := range spec.Files {
			named["sha256-"+strings.TrimPrefix(digest, "sha256:")] = true
		}
	}
	dir := filepath.Join(s.root, "files")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, unwritable(dir, err)
	}
	removed := 0
	for _, e := range entries {
		if named[e.Name()] || !strings.HasPrefix(e.Name(), "sha256-") {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < grace {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err == nil {
			removed++
		}
	}
	return removed, nil
}

// File implements store.Store.
func (s *Store) File(ctx context.Context, digest string) ([]byte, error) {
	hexSum, ok := strings.CutPrefix(digest, "sha256:")
	if _, err := hex.DecodeString(hexSum); !ok || err != nil || len(hexSum) != 64 {
		return nil, errs.New(errs.InvalidRequest, "%q is not a digest (sha256:<64 hex>)", digest)
	}
	data, err := os.ReadFile(filepath.Join(s.root, "files", "sha256-"+hexSum))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errs.New(errs.RunUnavailable, "no file %s in the store", digest).Wrap(store.ErrNotFound)
	}
	if err != nil {
		return nil, errs.New(errs.CapabilityUnavailable, "cannot read file %s", digest).Wrap(err)
	}
	return data, nil
}

// Records implements store.Store.
func (s *Store) Records(run string, kind store.Kind) store.Records {
	dir := filepath.Join(s.root, string(kind))
	if run != "" {
		dir = s.path(run, string(kind))
	}
	return &records{s: s, run: run, dir: dir}
}

// Log implements store.Store.
func (s *Store) Log(run string) store.Log {
	if run == "" || !journal.ValidRunID(run) {
		return fileLog{path: filepath.Join(s.root, LogFile), mkdir: true}
	}
	return fileLog{path: s.path(run, LogFile)}
}

// fileLog is a log file, appended to with one write a line. A run's log is never the reason
// its folder exists: one that is gone takes no line.
type fileLog struct {
	path  string
	mkdir bool
}

func (l fileLog) Name() string { return l.path }

func (l fileLog) Append(line []byte) error {
	if l.mkdir {
		if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
			return err
		}
	}
	// O_NOFOLLOW: a log replaced by a symlink must not make crw append to another file.
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(bytes.TrimRight(line, "\n"), '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Size implements store.Log.
func (l fileLog) Size() (int64, error) {
	fi, err := os.Lstat(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Read implements store.Log: whole lines only, so a line being written is read once it is.
func (l fileLog) Read(offset int64, max int) ([]byte, int64, error) {
	f, err := os.OpenFile(l.path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, offset, nil
	}
	if err != nil {
		return nil, offset, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, offset, err
	}
	return store.WholeLines(f, fi.Size(), offset, max)
}

// records is a folder of record files.
type records struct {
	s   *Store
	run string
	dir string
}

func (r *records) file(key string) (string, error) {
	if !store.ValidKey(key) {
		return "", errs.New(errs.InvalidRequest, "%q is not a record key (1 to 128 of A-Z a-z 0-9 . _ -)", key)
	}
	if r.run != "" {
		if err := r.s.checkRun(r.run); err != nil {
			return "", err
		}
	}
	return filepath.Join(r.dir, key+".json"), nil
}

func (r *records) Put(ctx context.Context, key string, value []byte) error {
	path, err := r.file(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return unwritable(r.dir, err)
	}
	if err := writeFile(path, value, true); err != nil {
		return unwritable(r.dir, err)
	}
	return nil
}

// Create writes the record under a temporary name and links it to its own: the link fails if
// the key is taken, and a reader never sees a record half written.
func (r *records) Create(ctx context.Context, key string, value []byte) error {
	path, err := r.file(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return unwritable(r.dir, err)
	}
	tmp, err := os.CreateTemp(r.dir, ".create-*")
	if err != nil {
		return unwritable(r.dir, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(value)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return unwritable(r.dir, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return errs.New(errs.IdempotencyConflict, "record %s/%s exists already", filepath.Base(r.dir), key).Wrap(store.ErrExists)
		}
		return unwritable(r.dir, err)
	}
	return journalfile.SyncDir(r.dir)
}

func (r *records) Get(ctx context.Context, key string) ([]byte, error) {
	path, err := r.file(key)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errs.New(errs.InvalidRequest, "no record %s/%s", filepath.Base(r.dir), key).Wrap(store.ErrNotFound)
	}
	if err != nil {
		return nil, errs.New(errs.CapabilityUnavailable, "cannot read record %s/%s", filepath.Base(r.dir), key).Wrap(err)
	}
	return data, nil
}

func (r *records) List(ctx context.Context, prefix string) ([]store.Record, error) {
	if r.run != "" {
		if err := r.s.checkRun(r.run); err != nil {
			return nil, err
		}
	}
	entries, err := os.ReadDir(r.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.New(errs.CapabilityUnavailable, "cannot read %s", r.dir).Wrap(err)
	}
	var out []store.Record
	for _, e := range entries {
		key, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !store.ValidKey(key) || !strings.HasPrefix(key, prefix) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(r.dir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, errs.New(errs.CapabilityUnavailable, "cannot read record %s", e.Name()).Wrap(err)
		}
		out = append(out, store.Record{Key: key, Value: data})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (r *records) Delete(ctx context.Context, key string) error {
	path, err := r.file(key)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return unwritable(r.dir, err)
	}
	return nil
}

// writeJSON writes v as a file others read: a temporary name, then a rename; durable fsyncs
// the file before the rename.
func writeJSON(path string, v any, durable bool) error {
	data, err := journal.MarshalPlain(v)
	if err != nil {
		return err
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, data, "", "  "); err != nil {
		return err
	}
	return writeFile(path, append(indented.Bytes(), '\n'), durable)
}

func writeFile(path string, data []byte, durable bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if durable {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if durable {
		return journalfile.SyncDir(filepath.Dir(path))
	}
	return nil
}

// readJSON reads a JSON file: a file that is missing is run_unavailable wrapping
// store.ErrNotFound, one that does not parse incompatible_schema.
// maxRunFile bounds run.json, state.json and the other small files of a run folder.
const maxRunFile = 16 << 20

func readJSON(path string, v any) error {
	// Bounded and regular files only: a run folder edited by hand (state.json replaced by
	// /dev/zero, a FIFO or a huge file) must not hang or exhaust a reader.
	data, err := userfile.Read(path, maxRunFile)
	if errors.Is(err, fs.ErrNotExist) {
		return errs.New(errs.RunUnavailable, "%s does not exist", path).Wrap(store.ErrNotFound)
	}
	if err != nil {
		return errs.New(errs.RunUnavailable, "cannot read %s: %v", path, err).Wrap(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return errs.New(errs.IncompatibleSchema, "%s: %v", path, err)
	}
	return nil
}
