// Package bound keeps the owner bindings of session runs (shared by the backends that bind to an
// owner: the session backend and the App Server backend) and decides the owner's spawns by
// them. A binding is the orchestrator line of <state>/flow-bound/<thread>.jsonl: the run the
// owner thread serves, the digest of its role table and the pairs of the six roles. The file is
// append-only, one JSON line per bind or close, the last line in force; the spawn hook reads it
// to give each spawn of the owner its role's pair.
package bound

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/crw-dev/crw/journal"
)

// Folder is the bindings' folder in the state folder.
const Folder = "flow-bound"

// Line kinds.
const (
	KindOrchestrator = "orchestrator"        // the owner serves the run
	KindClosed       = "orchestrator_closed" // the run let the owner go
)

// Roles are the six roles a line pairs; the critic may be missing from a line an earlier crw
// wrote.
var Roles = []string{"architect", "executor", "executor-t1", "reviewer", "explorer", "critic"}

// Line is one line of a thread's binding file.
type Line struct {
	Kind         string                  `json:"kind"`
	RunID        string                  `json:"run_id"`
	PolicyDigest string                  `json:"policyDigest,omitempty"`
	HelperPairs  map[string]journal.Pair `json:"helperPairs,omitempty"`
	At           time.Time               `json:"at"`
}

// Orchestrator is the orchestrator line of a run: its role table's digest and the decided pairs
// of the six roles (an undecided role has the empty pair; an effort without a model is none).
func Orchestrator(run, policyDigest string, roles map[string]journal.Pair) Line {
	pairs := map[string]journal.Pair{}
	for _, role := range Roles {
		p := roles[role]
		if p.Model == "" {
			p = journal.Pair{}
		}
		pairs[role] = p
	}
	return Line{Kind: KindOrchestrator, RunID: run, PolicyDigest: policyDigest, HelperPairs: pairs}
}

// Open tells whether the line binds its run.
func (l *Line) Open() bool { return l != nil && l.Kind == KindOrchestrator }

// Validate checks an orchestrator line: a run, a digest, and a pair for each of the first five
// roles (the empty pair of an undecided role included); a pair carries decided parts only, and
// an effort without a model is no role's pair.
func (l Line) Validate() error {
	if l.Kind != KindOrchestrator {
		return nil
	}
	if l.RunID == "" || l.PolicyDigest == "" {
		return errors.New("an orchestrator line names its run and its policyDigest")
	}
	for _, role := range Roles[:5] {
		if _, ok := l.HelperPairs[role]; !ok {
			return fmt.Errorf("an orchestrator line has no pair for %s", role)
		}
	}
	for role, p := range l.HelperPairs {
		if p.Model == "" && p.Effort != "" {
			return fmt.Errorf("the pair of %s has an effort without a model", role)
		}
	}
	return nil
}

// Same tells whether two lines bind the same run on the same pairs.
func (l *Line) Same(o *Line) bool {
	if l == nil || o == nil || l.Kind != o.Kind || l.RunID != o.RunID || l.PolicyDigest != o.PolicyDigest || len(l.HelperPairs) != len(o.HelperPairs) {
		return false
	}
	for r, p := range l.HelperPairs {
		if o.HelperPairs[r] != p {
			return false
		}
	}
	return true
}

// ErrUntrusted is wrapped by the error of a bindings folder or file that crw cannot trust: not
// the user's, open to others, or a link. It is read as no binding.
var ErrUntrusted = errors.New("the flow-bound folder cannot be trusted")

// Store is a state folder's bindings.
type Store struct{ Dir string } // <state>/flow-bound

// Check tells whether the folder can be trusted and written, as a bind needs it ("nil" for a
// folder not made yet).
func (s Store) Check() error {
	if err := s.dir(false); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// New is the bindings of the state folder state.
func New(state string) Store { return Store{Dir: filepath.Join(state, Folder)} }

// ValidThread tells whether s has the form of a Codex thread id: lower-case hexadecimal and -.
func ValidThread(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == '-') {
			return false
		}
	}
	return true
}

// dir checks the folder (made when create): a real folder of this user, mode 0700.
func (s Store) dir(create bool) error {
	fi, err := os.Lstat(s.Dir)
	if errors.Is(err, os.ErrNotExist) && create {
		if err := os.MkdirAll(filepath.Dir(s.Dir), 0o700); err != nil {
			return err
		}
		if err := os.Mkdir(s.Dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		fi, err = os.Lstat(s.Dir)
	}
	if err != nil {
		return err
	}
	return trusted(s.Dir, fi, true)
}

func trusted(path string, fi os.FileInfo, folder bool) error {
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("%w: %s is a link", ErrUntrusted, path)
	case folder && !fi.IsDir(), !folder && !fi.Mode().IsRegular():
		return fmt.Errorf("%w: %s is not a %s", ErrUntrusted, path, map[bool]string{true: "folder", false: "regular file"}[folder])
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%w: %s is open to others (mode %o, not 0%o)", ErrUntrusted, path, fi.Mode().Perm(), map[bool]int{true: 0o700, false: 0o600}[folder])
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%w: %s belongs to uid %d, not to this user", ErrUntrusted, path, st.Uid)
	}
	return nil
}

func (s Store) path(thread string) string { return filepath.Join(s.Dir, thread+".jsonl") }

// lock holds the folder's lock: a bind reads the last line and appends under it, so two starts
// on one thread cannot both bind.
func (s Store) lock() (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(s.Dir, ".lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	// Held for an instant by whoever holds it: waited for a while, never for ever.
	deadline := time.Now().Add(lockWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("the lock %s is held by another process for more than %s", filepath.Join(s.Dir, ".lock"), lockWait)
			}
			return nil, err
		}
		time.Sleep(5 * time.Millisecond)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// lockWait bounds the wait for the folder's lock.
const lockWait = 10 * time.Second

// maxTail is how much of a binding file is read for its last line.
const maxTail = 64 << 10

// Last is the line in force for a thread: nil when it has none. An untrusted folder or file is
// ErrUntrusted; a last line that is not JSON is an error naming the file.
func (s Store) Last(thread string) (*Line, error) {
	if !ValidThread(thread) {
		return nil, fmt.Errorf("%q is not a thread id", thread)
	}
	if err := s.dir(false); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return s.last(thread)
}

// tail reads at most the last limit bytes of a file of this user's, from the start of a line
// (nil for a missing file).
func tail(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUntrusted, path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := trusted(path, fi, false); err != nil {
		return nil, err
	}
	start := max(fi.Size()-limit, 0)
	data, err := io.ReadAll(io.NewSectionReader(f, start, fi.Size()-start))
	if err != nil {
		return nil, err
	}
	if start > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 || i == len(data)-1 {
			return nil, fmt.Errorf("%s: its last line is longer than %d bytes", path, limit)
		}
		data = data[i+1:]
	}
	return data, nil
}

func (s Store) last(thread string) (*Line, error) {
	path := s.path(thread)
	data, err := tail(path, maxTail)
	if err != nil || data == nil {
		return nil, err
	}
	data = bytes.TrimRight(data, "\n")
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[i+1:]
	}
	if len(data) == 0 {
		return nil, nil
	}
	var l Line
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("%s: its last line is not a binding: %v", path, err)
	}
	return &l, nil
}

func (s Store) append(thread string, l Line) error {
	if l.At.IsZero() {
		l.At = time.Now().UTC()
	}
	data, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return appendLine(s.path(thread), data)
}

// appendLine appends one line to a file of this user's, durably, never through a link.
func appendLine(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err != nil || trusted(path, fi, false) != nil {
		f.Close()
		if err == nil {
			err = trusted(path, fi, false)
		}
		return err
	}
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	_, _ = w.Write(append(data, '\n'))
	err = w.Flush()
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Outcome is what a bind did.
type Outcome struct {
	Bound   bool
	Warning string // why it did not bind, when it did not
}

// Bind makes l the thread's line, under the folder's lock, unless the thread's open line is
// another run's that live says is live (a process holds it, or its start does): then it warns
// and writes nothing. The open line of a run that is not live is closed first. A line already
// in force is not written again.
func (s Store) Bind(thread string, l Line, live func(run string) bool) (Outcome, error) {
	if !ValidThread(thread) {
		return Outcome{Warning: fmt.Sprintf("%q is not a thread id: the owner is not bound", thread)}, nil
	}
	if err := l.Validate(); err != nil {
		return Outcome{}, err
	}
	if err := s.dir(true); err != nil {
		return Outcome{}, err
	}
	unlock, err := s.lock()
	if err != nil {
		return Outcome{}, err
	}
	defer unlock()
	last, err := s.last(thread)
	if err != nil {
		return Outcome{}, err
	}
	switch {
	case last.Same(&l):
		return Outcome{Bound: true}, nil
	case last.Open() && last.RunID != l.RunID && live(last.RunID):
		return Outcome{Warning: fmt.Sprintf("thread %s serves live run %s: the owner is not bound to run %s", thread, last.RunID, l.RunID)}, nil
	case last.Open() && last.RunID != l.RunID:
		if err := s.append(thread, Line{Kind: KindClosed, RunID: last.RunID}); err != nil {
			return Outcome{}, err
		}
	}
	if err := s.append(thread, l); err != nil {
		return Outcome{}, err
	}
	return Outcome{Bound: true}, nil
}

// BindOwner binds a session run's owner thread to the run's line l (Bind): what keeps it from
// binding is returned as a warning, never an error, for the run goes on, and its binds still
// check every subagent's pair.
func (s Store) BindOwner(owner string, l Line, live func(run string) bool) string {
	out, err := s.Bind(owner, l, live)
	switch {
	case err != nil:
		return fmt.Sprintf("the owner thread %s cannot be bound to run %s: %v; its spawns get no pair from the run", owner, l.RunID, err)
	case !out.Bound:
		return out.Warning
	}
	return ""
}

// Close lets the thread go from run: a closing line, when the line in force is the run's.
func (s Store) Close(thread, run string) error {
	if !ValidThread(thread) {
		return nil
	}
	if err := s.dir(false); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	last, err := s.last(thread)
	if err != nil || !last.Open() || last.RunID != run {
		return err
	}
	return s.append(thread, Line{Kind: KindClosed, RunID: run})
}
