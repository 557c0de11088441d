package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
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

// CrashAfterCommitEnv names the variable that makes a run's process kill itself (SIGKILL)
// right after its Nth journal commit: the crash tests use it to stop a run between any two
// commits.
const CrashAfterCommitEnv = "CRW_CRASH_AFTER_COMMIT"

// watchEvery is how often a holder looks for a cancel request and checks that its lease holds.
const watchEvery = 100 * time.Millisecond

// Acquire implements store.Store: the run's process lock, then its run lock (both flock, held
// until Release), then its journal, checked and opened for writing. While it is held, the
// lease serves the journal's rows to readers on the run's socket and watches for a cancel
// request and for the loss of its lock file (the run's folder removed or replaced).
func (s *Store) Acquire(ctx context.Context, run string) (store.Lease, error) {
	return s.AcquireReading(ctx, run, nil)
}

var _ store.ReadingAcquirer = (*Store)(nil)

// readsChecked reports whether AcquireReading reads a journal of size bytes on the file just
// checked.
var readsChecked = journalfile.KeptWhole

// readError is an error of AcquireReading's read, returned as it is.
type readError struct{ err error }

func (e readError) Error() string { return e.err.Error() }

// AcquireReading implements store.ReadingAcquirer: Acquire that gives read the journal
// read-only on the file it checks, before it is opened to write (journalfile.OpenRun: beside the
// check, and again on a file the log's open changed). An error of read's is returned as it is,
// once the journal passed its check, and the run let go.
//
// A journal too large to stay mapped in (journalfile.KeptWhole) gains nothing read on the
// file just checked, whose pages the check let go as it went, and its readers would find no
// socket to read it through for as long as the read takes (seconds at 100,000 calls): it is
// read once the lease serves them.
func (s *Store) AcquireReading(ctx context.Context, run string, read func(store.Journal) error) (store.Lease, error) {
	if err := s.checkRun(run); err != nil {
		return nil, err
	}
	if info, err := os.Stat(s.path(run, JournalFile)); read != nil && err == nil && !readsChecked(info.Size()) {
		l, err := s.Acquire(ctx, run)
		if err != nil {
			return nil, err
		}
		if err := read(l.Journal()); err != nil {
			_ = l.Release()
			return nil, err
		}
		return l, nil
	}
	dir := s.RunDir(run)
	locks, err := lockRun(dir, run)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, JournalFile)
	var readJournal func(*journalfile.Journal) error
	if read != nil {
		readJournal = func(ro *journalfile.Journal) error {
			if ro.RunID() != run {
				return nil // refused below, as the open to write is
			}
			if err := read(ro); err != nil {
				return readError{err}
			}
			return nil
		}
	}
	j, err := journalfile.OpenRun(path, run, readJournal)
	if re, ok := err.(readError); ok {
		locks.release()
		return nil, re.err
	}
	if err == nil && j.RunID() != run {
		j.Close()
		err = fmt.Errorf("%w: the journal is run %s's", journalfile.ErrSchema, j.RunID())
	}
	if err != nil {
		locks.release()
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil, noJournal(run, path)
		case errors.Is(err, journalfile.ErrLocked):
			return nil, errs.New(errs.RunUnavailable, "run %s: its journal is held by another process", run).Wrap(store.ErrHeld)
		case errors.Is(err, journalfile.ErrCorrupt), errors.Is(err, journalfile.ErrSchema):
			return nil, damaged(run, path, err)
		}
		return nil, errs.New(errs.RunUnavailable, "run %s: cannot open the journal %s", run, path).Wrap(err)
	}
	armCrashPoint(j)
	l := &lease{
		s: s, run: run, dir: dir, locks: locks, j: j, conns: map[net.Conn]struct{}{},
		cancelled: make(chan struct{}), lost: make(chan struct{}), stop: make(chan struct{}),
	}
	if n := s.takeCrashAfter(run); n > 0 {
		l.crashAfter(n)
	}
	if st, err := locks.run.Stat(); err == nil {
		l.lockFile = st
	}
	if l.ln, l.sock, err = listen(filepath.Join(dir, ControlSocket)); err != nil {
		// Readers are told the holder does not answer; the run itself is not held up.
		l.ln = nil
	}
	// A cancel stored before the lease was taken is the lease's from its first moment, not
	// from the watcher's first look: a script that ends at once must not outrun it.
	l.checkCancel()
	l.wg.Add(1)
	go l.watch()
	if l.ln != nil {
		l.wg.Add(1)
		go l.serve()
	}
	return l, nil
}

func armCrashPoint(j *journalfile.Journal) {
	n, err := strconv.ParseUint(os.Getenv(CrashAfterCommitEnv), 10, 64)
	if err != nil || n == 0 {
		return
	}
	j.OnCommit(func(commits uint64) {
		if commits == n {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way; nothing more may happen
		}
	})
}

// CrashAfterCommit makes the next lease of run this Store gives lose its holding right after
// its journal's nth commit, as a process killed there would: nothing more is written (the
// journal is fenced by the commit itself, before the next one can start), and the lease is
// lost, so the run's process stops and lets the run go for the next. It is the simulator's
// fault (engine/sim), in process, as store/mem and store/etcd have it; the crash tests kill a
// real process instead (CrashAfterCommitEnv).
func (s *Store) CrashAfterCommit(run string, n uint64) {
	s.crashMu.Lock()
	defer s.crashMu.Unlock()
	if s.crashAfter == nil {
		s.crashAfter = map[string]uint64{}
	}
	s.crashAfter[run] = n
}

// takeCrashAfter is the commit after which the lease of run now given is to lose its holding
// (0: none), which no later lease has.
func (s *Store) takeCrashAfter(run string) uint64 {
	s.crashMu.Lock()
	defer s.crashMu.Unlock()
	n := s.crashAfter[run]
	delete(s.crashAfter, run)
	return n
}

// crashAfter has the lease lose its holding right after its journal's nth commit. The fence
// is set on the committer, between that commit and the next; the journal's close, which waits
// for the committer, is left to a goroutine, as the watcher's loss of the lease is.
func (l *lease) crashAfter(n uint64) {
	l.j.OnCommit(func(commits uint64) {
		if commits == n {
			l.j.Fence(fmt.Errorf("journal: %w", store.ErrLeaseLost))
			go l.loseLease()
		}
	})
}

// lease is a run held by this process.
type lease struct {
	s        *Store
	run, dir string
	locks    *runLocks
	lockFile os.FileInfo // run.lock as locked: a lock file no longer this one means the lease is lost
	j        *journalfile.Journal
	ln       net.Listener
	sock     os.FileInfo // control.sock as bound: only that file is removed at Release

	connMu sync.Mutex
	conns  map[net.Conn]struct{} // readers being answered, closed at Release

	cancelOnce, lostOnce, releaseOnce sync.Once
	cancelled, lost, stop             chan struct{}
	wg                                sync.WaitGroup
}

var _ store.Lease = (*lease)(nil)

func (l *lease) Run() string   { return l.run }
func (l *lease) Token() string { return l.locks.token }

// ProcessLockError implements store.ProcessLockWarner: why the process lock could not be taken.
func (l *lease) ProcessLockError() error    { return l.locks.processErr }
func (l *lease) Journal() store.Journal     { return l.j }
func (l *lease) Dir() string                { return l.dir }
func (l *lease) Cancelled() <-chan struct{} { return l.cancelled }
func (l *lease) Lost() <-chan struct{}      { return l.lost }

// TakeAnswers implements store.Lease: the files of the run's answers folder, oldest first,
// each removed once read. A file that is not an answer is removed and reported as one with no
// id, so the run can say so.
func (l *lease) TakeAnswers() ([]store.Answer, error) {
	dir := filepath.Join(l.dir, AnswersDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	type file struct {
		path string
		mod  time.Time
	}
	var files []file
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
			continue // a temporary file being written, or something no answer
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		files = append(files, file{filepath.Join(dir, e.Name()), info.ModTime()})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod.Before(files[j].mod) })
	var out []store.Answer
	for _, f := range files {
		var a store.Answer
		data, err := userfile.Read(f.path, 4<<20)
		if err != nil || json.Unmarshal(data, &a) != nil {
			a = store.Answer{}
		}
		if err := os.Remove(f.path); err != nil {
			return out, err
		}
		out = append(out, a)
	}
	return out, nil
}

// Publish writes state.json. It is not fsynced: the journal is the record, and a reader that
// finds it behind (a holder killed after its last commit) reads the journal.
func (l *lease) Publish(st *store.Status) {
	select {
	case <-l.lost:
		return // another process may hold the run now
	default:
	}
	_ = writeJSON(filepath.Join(l.dir, StateFile), stateFile{Schema: StateSchema, Status: st}, false)
}

// Release implements store.Lease: the watcher and the socket stop (readers being answered are
// cut off: they read the rest from the file), the journal is closed, and the locks are let go,
// the run lock first. A lease that was lost leaves the run's folder alone: it may be another
// holder's now.
func (l *lease) Release() error {
	var err error
	l.releaseOnce.Do(func() {
		close(l.stop)
		if l.ln != nil {
			l.ln.Close()
		}
		l.connMu.Lock()
		for c := range l.conns {
			c.Close()
		}
		l.connMu.Unlock()
		l.wg.Wait()
		if path := filepath.Join(l.dir, ControlSocket); l.ln != nil && sameFile(path, l.sock) {
			os.Remove(path)
		}
		err = l.j.Close()
		if errors.Is(err, store.ErrLeaseLost) || errors.Is(err, journalfile.ErrClosed) {
			err = nil // closed when the lease was lost: nothing was written after
		}
		l.locks.release()
	})
	return err
}

// watch looks for a cancel request and checks the lease, every watchEvery.
func (l *lease) watch() {
	defer l.wg.Done()
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		l.checkCancel()
		if !l.holds() {
			l.loseLease()
			return
		}
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
	}
}

func (l *lease) checkCancel() {
	if _, err := os.Stat(filepath.Join(l.dir, CancelFile)); err == nil {
		l.cancelOnce.Do(func() { close(l.cancelled) })
	}
}

// holds reports whether the run lock this process holds is still the run's: a run folder
// removed or replaced behind the holder's back can be taken by another process.
func (l *lease) holds() bool {
	st, err := os.Stat(filepath.Join(l.dir, RunLockFile))
	return err == nil && l.lockFile != nil && os.SameFile(st, l.lockFile)
}

// loseLease fences the journal and closes it, so the process that may take the run over can
// open it, and says so.
func (l *lease) loseLease() {
	l.lostOnce.Do(func() {
		l.j.Fence(fmt.Errorf("journal: %w", store.ErrLeaseLost))
		l.j.Close()
		close(l.lost)
	})
}

// runLocks are the locks a process holds while it executes a run: its own process lock,
// taken first and let go last, and the run lock.
type runLocks struct {
	token   string // names the process lock: process.<token>.lock ("": none was taken)
	process *os.File
	run     *os.File
	// processErr is why the process lock could not be taken: the run goes on without one,
	// and its started row names no process (seed 003).
	processErr error
}

// lockRun takes a run's process lock and then its run lock; a run another process holds is
// run_unavailable. A process lock that cannot be taken is no reason to refuse the run: it goes
// on without one (processErr says why, for the run's warning).
func lockRun(dir, id string) (*runLocks, error) {
	l := &runLocks{token: randomToken()}
	var err error
	if l.process, err = lockProcess(filepath.Join(dir, "process."+l.token+".lock")); err != nil {
		l.token, l.process, l.processErr = "", nil, err
	} else {
		fmt.Fprintf(l.process, "%d\n", os.Getpid())
	}
	if l.run, err = flockFile(filepath.Join(dir, RunLockFile)); err != nil {
		l.releaseProcess()
		if isWouldBlock(err) {
			return nil, errs.New(errs.RunUnavailable, "run %s is held by another live process", id).Wrap(store.ErrHeld)
		}
		return nil, errs.New(errs.CapabilityUnavailable, "run %s: cannot take the run lock", id).Wrap(err)
	}
	removeStaleProcessLocks(dir, l.token, time.Now())
	return l, nil
}

// staleAfter is how old a process lock no process holds must be before the run's next holder
// removes it: a process creates its lock file a moment before it locks it.
const staleAfter = time.Minute

// removeStaleProcessLocks removes the process locks of processes of the run that are gone (a
// process killed leaves its own): those no process holds, made more than staleAfter before now.
// A run killed a thousand times keeps no thousand files; what readers learn from a process
// lock (whether the process a started row names is alive) is the same without it.
func removeStaleProcessLocks(dir, own string, now time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		token, ok := strings.CutPrefix(e.Name(), "process.")
		if token, ok2 := strings.CutSuffix(token, ".lock"); !ok || !ok2 || token == own {
			continue
		}
		path := filepath.Join(dir, e.Name())
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || now.Sub(info.ModTime()) < staleAfter {
			continue
		}
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			if sameFile(path, info) {
				os.Remove(path) // while locked: no process takes it meanwhile
			}
		}
		f.Close()
	}
}

func (l *runLocks) release() {
	if l.run != nil {
		_ = syscall.Flock(int(l.run.Fd()), syscall.LOCK_UN)
		l.run.Close()
	}
	l.releaseProcess()
}

func (l *runLocks) releaseProcess() {
	if l.process == nil {
		return
	}
	name := l.process.Name()
	st, _ := l.process.Stat()
	_ = syscall.Flock(int(l.process.Fd()), syscall.LOCK_UN)
	l.process.Close()
	if sameFile(name, st) {
		os.Remove(name) // never a file of that name that is not the one this process locked
	}
}

// sameFile reports whether path is still the file described by was.
func sameFile(path string, was os.FileInfo) bool {
	st, err := os.Lstat(path)
	return err == nil && was != nil && os.SameFile(st, was)
}

// flockFile opens (creating) a lock file and locks it exclusively. A reader that checks
// whether the run is held takes a shared lock for an instant, so a lock found taken is tried
// again for a short while before it counts as held by a holder.
// lockProcess takes a process lock (a variable: a test makes it fail).
var lockProcess = flockFile

func flockFile(path string) (*os.File, error) {
	// O_NOFOLLOW: a run.lock replaced by a symlink must not make crw create a file elsewhere;
	// O_NONBLOCK: nor may a FIFO in its place hang the open.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, err
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	for try := 0; ; try++ {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !isWouldBlock(err) || try == lockTries {
			f.Close()
			return nil, err
		}
		time.Sleep(time.Millisecond)
	}
}

// lockTries is how many more times a taken lock is tried, a millisecond apart.
const lockTries = 100

func isWouldBlock(err error) bool { return errors.Is(err, syscall.EWOULDBLOCK) }

func randomToken() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Held reports whether a process holds a run of the state folder root now.
func Held(root, run string) bool {
	return lockedByOther(filepath.Join(root, "flow", run, RunLockFile))
}

// Held reports whether a process holds a run of the store now.
func (s *Store) Held(run string) bool { return Held(s.root, run) }

// ProcessLocks lists the tokens of a run's process locks that live processes hold.
func ProcessLocks(root, run string) []string {
	dir := filepath.Join(root, "flow", run)
	entries, _ := os.ReadDir(dir)
	var held []string
	for _, e := range entries {
		name := e.Name()
		token, ok := strings.CutPrefix(name, "process.")
		if token, ok2 := strings.CutSuffix(token, ".lock"); ok && ok2 && lockedByOther(filepath.Join(dir, name)) {
			held = append(held, token)
		}
	}
	return held
}

// lockedByOther reports whether a lock file is flock'd by an open file other than a new one.
func lockedByOther(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return isWouldBlock(err)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// StartLockFile is a run's start lock: crw flow start holds it from before it binds the run's
// owner until the run's process holds the run, so the run counts as live all along.
const StartLockFile = "start.lock"

// StartLock takes a run's start lock; release lets it go.
func (s *Store) StartLock(run string) (release func(), err error) {
	if !journal.ValidRunID(run) {
		return nil, fmt.Errorf("%q is not a run id", run)
	}
	return StartLockIn(s.RunDir(run))
}

// StartLockIn takes the start lock of the run whose folder on this host is dir (made when
// missing): a run on another store whose start this host does (a session run's).
func StartLockIn(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := flockFile(filepath.Join(dir, StartLockFile))
	if err != nil {
		return nil, err
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// Starting reports whether another process holds the start lock of the run whose folder on
// this host is dir.
func Starting(dir string) bool { return lockedByOther(filepath.Join(dir, StartLockFile)) }

// Live reports whether a run of the state folder root is live: a process holds it, or its
// start does.
func Live(root, run string) bool {
	if !journal.ValidRunID(run) {
		return false
	}
	return Held(root, run) || lockedByOther(filepath.Join(root, "flow", run, StartLockFile))
}

// Live implements store.Liveness: Live of the store's state folder.
func (s *Store) Live(run string) bool { return Live(s.root, run) }

var _ store.Liveness = (*Store)(nil)
