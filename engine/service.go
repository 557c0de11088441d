// Package engine is the run service: Create, Execute, Start, Cancel, Follow, Status, List,
// Timeline, Rows, Shadow and Delete, one engine-level API that the command line calls (and the
// operator interface will). It knows runs only through a store.Store and backends only through
// a backend.Registry; one process's execution of a run is engine/runner's, and replay is
// engine/replay's.
//
// A process that executes one run (the detached run process, a foreground run or resume) puts
// the environment the run recorded (Env) into its own before Execute, and puts back what was
// there afterwards; the engine itself never changes the process's environment. A process that
// hosts several runs starts each in a process of its own (Start).
//
// It is over 1,500 lines because it is the one API of a run's lifecycle (create, execute, start,
// cancel, follow, answer, recover, change a resume, inspect, delete): each operation is a
// method of the one Service over the store and the registry, and the work behind each lives in
// the packages it calls (runspec, runner, offline, replay, shadow, diagnosis).
package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/placer"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/runner"
	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/engine/runner/runwarn"
	"github.com/crw-dev/crw/engine/runspec"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/engine/workspace"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Service is the run lifecycle over a store and a set of backends.
type Service struct {
	Store    store.Store
	Backends *backend.Registry
	// Launcher starts a run's process for Start; nil when this service cannot.
	Launcher Launcher
	// ReplayBudget is what a reading of a run's journal keeps of its calls' rows for their
	// deliveries, in bytes: 0 is replay.KeptBudget, less than 0 nothing (each call's rows are
	// read again when it is delivered). The simulator varies it.
	ReplayBudget int
	// FollowEvery and FollowWatched are Follow's intervals when not 0 (FollowEvery,
	// FollowWatched): a test that must see Follow move on changes alone sets them long.
	FollowEvery, FollowWatched time.Duration
	// Host is this host's id among those that share the store (ops.HostID): a run created on a
	// shared store on a backend whose runs are bound to their host is tied to it, and another
	// host's service refuses to go on with it.
	Host string
	// StateDir is this host's state folder, where session runs' owner bindings are; "" is the
	// one a run's folder is in (<state>/flow/<run>), none for another folder.
	StateDir string
}

// replayBudget is the budget of the service's readings of journals (ReplayBudget).
func (s *Service) replayBudget() int {
	if s.ReplayBudget == 0 {
		return replay.KeptBudget
	}
	return s.ReplayBudget
}

// CreateOptions are what a run is created with (runspec.Options).
type CreateOptions = runspec.Options

// DefaultPool is the pool of a run created with none.
const DefaultPool = runspec.DefaultPool

// CreateLimits bound what a run's workflow may take, each nil for its default
// (runspec.Limits).
type CreateLimits = runspec.Limits

// ExecOptions are how this process executes a run.
type ExecOptions struct {
	// Console receives the script's console and crw.log lines (muted while it replays).
	Console io.Writer
	// OnEvent receives live progress; it is called from many goroutines, one event at a time.
	OnEvent func(progress.Event)
	// OnStart is called once the process holds the run and its started row is durable (before
	// the backend's OnStart hook, backend.Lifecycle).
	OnStart func(run string)
	// Warn is told what a backend's lifecycle hook could not do (a session run's owner that
	// cannot be bound), one warning each: the run goes on. They are this process's, not the
	// run's: nothing journals them. nil drops them.
	Warn func(warning string)
	// Backend replaces the backend the spec names (tests, a dry run).
	Backend backend.Backend
	// DryRun runs it as a rehearsal (runner.Config.DryRun): crw flow check.
	DryRun bool
}

// Run creates a run and executes it in this process.
func (s *Service) Run(ctx context.Context, opts CreateOptions, x ExecOptions) (*store.Status, error) {
	id, err := s.Create(ctx, opts)
	if err != nil {
		return nil, err
	}
	return s.Execute(ctx, id, x)
}

// Validate checks the options a run would be created with, as Create does, creating nothing and
// loading no workflow (a dry run): it returns the backend's options as the run would record
// them.
func (s *Service) Validate(ctx context.Context, opts CreateOptions) (map[string]string, error) {
	return runspec.Validate(ctx, opts, s.Backends)
}

// Create checks a workflow and its options and records the run: its spec (runspec.Make) and
// an empty journal. Nothing is recorded when the workflow does not load or an option is wrong:
// a wrong option is an errs.FieldError naming it (Fields).
func (s *Service) Create(ctx context.Context, opts CreateOptions) (string, error) {
	if sh, ok := s.Store.(store.Shared); ok && sh.Shared() {
		opts.KeepCode = true // a process of any host may go on with the run
		if d, err := s.Backends.Lookup(opts.Backend); err == nil && d.HostBound {
			if s.Host == "" {
				return "", errs.New(errs.CapabilityUnavailable, "a run on the %s backend is tied to its host, and this process does not know its host's id", opts.Backend)
			}
			opts.Host = s.Host
		}
	}
	spec, err := runspec.Make(ctx, opts, s.Backends, s.Store)
	if err != nil {
		return "", err
	}
	if err := s.Store.Create(ctx, spec); err != nil {
		return "", err
	}
	return spec.Run, nil
}

// Execute runs a run in this process: it takes the run's lease, replays what its journal
// already holds and goes on live to the end. An error means the run did not end: it could not
// start, or its process stopped (a divergence, a journal that failed, a lost lease), the full
// account in the run's log.
func (s *Service) Execute(ctx context.Context, run string, x ExecOptions) (*store.Status, error) {
	st, err := s.execute(ctx, run, x)
	if err != nil {
		s.logError(run, err)
	}
	return st, err
}

// summarized is a journal that keeps its summary in hand (store/local's).
type summarized interface {
	Summary() (*journal.Summary, error)
}

// rebuilt is a journal that says whether its open made its file again from its log (a store
// whose journals keep a log: store/local's).
type rebuilt interface {
	Rebuilt() bool
}

func (s *Service) execute(ctx context.Context, run string, x ExecOptions) (*store.Status, error) {
	spec, err := s.Store.Spec(ctx, run)
	if err != nil {
		return nil, err
	}
	if err := s.OnThisHost(spec); err != nil {
		return nil, err
	}
	runner.Warm(spec)
	lease, h, err := s.takeAndRead(ctx, run, true)
	if err != nil {
		if ended, ok := err.(runEnded); ok {
			return nil, ended.err
		}
		return nil, s.whyNotResumed(ctx, run, err)
	}
	defer lease.Release()
	if h != nil {
		if h.Ended != nil {
			return nil, errs.New(errs.RunUnavailable, "run %s has ended (%s): there is nothing to resume", run, h.Ended.Status)
		}
	}
	var started *journal.Row
	if h != nil {
		started = h.Started
	}
	if err := runspec.Check(run, spec, started); err != nil {
		return nil, err
	}
	if h != nil {
		spec = withChanges(spec, h.Changes)
	}
	kept, err := s.keptCode(ctx, spec)
	if err != nil {
		return nil, err
	}
	if dir, err := s.repositoryHere(ctx, spec); err != nil {
		return nil, err
	} else if dir != spec.Repo {
		here := *spec // this host's clone of the run's repository
		here.Repo = dir
		spec = &here
	}
	if h != nil && h.Backend != "" && x.Backend == nil && h.Backend != spec.Backend {
		// A mixed resume: refused before the backend is opened, as before any row.
		return nil, errs.New(errs.InvalidRequest, "run %s ran on backend %s; it cannot resume on %s (the backend of its run.json)", run, h.Backend, spec.Backend).
			Next("put back the spec the run was created with")
	}
	process := 1 // this process writes the run's process-th started row
	if h != nil {
		process = h.Starts + 1
	}
	be := x.Backend
	warnings := &runwarn.Sink{}
	if be == nil {
		be, err = s.Backends.Open(spec.Backend, backend.Config{
			Run: run, Options: spec.BackendOptions, Cwd: spec.Cwd, Env: spec.Env, Dir: lease.Dir(), Warn: warnings.Warn,
			Report: warnings.Report, Process: process, State: s.stateOf(lease.Dir()), Roles: spec.Roles, Live: s.live,
		})
		if err != nil {
			return nil, err
		}
	}
	defer be.Close()
	onStart, onEnd := hooks(ctx, be, process, x)
	if h != nil && h.Backend != "" && h.Backend != be.Name() {
		return onEnd(nil, errs.New(errs.InvalidRequest, "run %s ran on backend %s; it cannot resume on %s", run, h.Backend, be.Name()))
	}
	return onEnd(runner.Run(ctx, runner.Config{
		Spec: spec, Code: kept, Lease: lease, Backend: be, History: h, Warnings: warnings,
		Console: x.Console, OnEvent: x.OnEvent, OnStart: onStart, DryRun: x.DryRun, Log: s.Store.Log(run),
	}))
}

// keptCode is the code a run whose code is kept loads, each of its files read from the store by
// its digest and checked against it; nil for a run that loads its workflow from disk.
func (s *Service) keptCode(ctx context.Context, spec *store.Spec) (map[string][]byte, error) {
	if !spec.CodeKept {
		return nil, nil
	}
	if len(spec.Files) == 0 {
		return nil, errs.New(errs.IncompatibleSchema, "run %s keeps its code, but its spec names no file of it", spec.Run)
	}
	kept := make(map[string][]byte, len(spec.Files))
	for path, digest := range spec.Files {
		data, err := s.Store.File(ctx, digest)
		if err != nil {
			return nil, errs.New(errs.IncompatibleSchema, "run %s: its workflow's file %s (%s) cannot be read from the store: %v", spec.Run, path, digest, err).Wrap(err)
		}
		sum := sha256.Sum256(data)
		if "sha256:"+hex.EncodeToString(sum[:]) != digest {
			return nil, errs.New(errs.IncompatibleSchema, "run %s: its workflow's file %s is not the content of its digest %s in the store", spec.Run, path, digest)
		}
		kept[path] = data
	}
	return kept, nil
}

// hooks are what the runner calls once the process's started row is durable (x.OnStart, then
// the backend's OnStart) and what the process's end goes through (the backend's OnEnd), when
// be is a backend.Lifecycle; their errors go to x.Warn.
func hooks(ctx context.Context, be backend.Backend, process int, x ExecOptions) (onStart func(string), onEnd func(*store.Status, error) (*store.Status, error)) {
	warn := func(err error) {
		if err != nil && x.Warn != nil {
			x.Warn(err.Error())
		}
	}
	life, _ := be.(backend.Lifecycle)
	onStart = func(run string) {
		if x.OnStart != nil {
			x.OnStart(run)
		}
		if life != nil {
			warn(life.OnStart(ctx, backend.RunStarted{Run: run, Process: process}))
		}
	}
	onEnd = func(end *store.Status, err error) (*store.Status, error) {
		if life != nil {
			warn(life.OnEnd(context.WithoutCancel(ctx), end))
		}
		return end, err
	}
	return onStart, onEnd
}

// live tells whether a run of the store is live (backend.Config.Live): as the store says, for
// a store.Liveness, else while a process holds it (or while that cannot be read).
func (s *Service) live(run string) bool {
	if l, ok := s.Store.(store.Liveness); ok {
		return l.Live(run)
	}
	_, held, err := s.Store.Published(context.Background(), run)
	return err != nil || held
}

// whyNotResumed says what kept a run from being taken, when err (taking its lease, reading
// its journal) hides it: the run was deleted meanwhile (not a damaged journal), or it has
// ended (not a lock a read-only state folder cannot give). Otherwise err stands.
func (s *Service) whyNotResumed(ctx context.Context, run string, err error) error {
	if errors.Is(err, store.ErrHeld) {
		return err
	}
	if _, serr := s.Store.Spec(ctx, run); errors.Is(serr, store.ErrNotFound) {
		return errs.New(errs.RunUnavailable, "run %s was deleted while it was being taken", run).Wrap(err).
			Because("resume", "run_deleted", "not_started", errs.Certain)
	}
	if st, serr := s.Status(ctx, run); serr == nil && st.State == store.StateEnded {
		return errs.New(errs.RunUnavailable, "run %s has ended (%s): there is nothing to resume", run, st.Status).Wrap(err)
	}
	return err
}

// takeAndRead takes a run's lease and reads its journal into a History (readJournal): where
// the store can (store.ReadingAcquirer), on the journal it has just checked, before it is
// opened to write, whose pages the check mapped in (a 10,000-call resume's History ~5 ms
// sooner); the History's later pages (Load) are read on the lease's journal. With
// refuseEnded, a run whose journal's summary says it has ended is refused (runEnded) before
// its rows are read (a 10,000-call run's, 0.3 s).
func (s *Service) takeAndRead(ctx context.Context, run string, refuseEnded bool) (store.Lease, *replay.History, error) {
	var src journalSource
	var h *replay.History
	read := func(j store.Journal) error {
		if sj, ok := j.(summarized); ok && refuseEnded {
			if sum, err := sj.Summary(); err == nil && store.RunStatus(sum.Status).Final() {
				recovered := ""
				if r, ok := j.(rebuilt); ok && r.Rebuilt() {
					recovered = "; its journal, which the machine's restart had left to recover, was made again from its log"
				}
				return runEnded{errs.New(errs.RunUnavailable, "run %s has ended (%s): there is nothing to resume%s", run, sum.Status, recovered)}
			}
		}
		src.set(j)
		var err error
		h, err = readJournal(run, src.each, s.replayBudget())
		return err
	}
	var lease store.Lease
	var err error
	if ra, ok := s.Store.(store.ReadingAcquirer); ok {
		lease, err = ra.AcquireReading(ctx, run, read)
	} else if lease, err = s.Store.Acquire(ctx, run); err == nil {
		if err = read(lease.Journal()); err != nil {
			_ = lease.Release()
		}
	}
	if err != nil {
		return nil, nil, err
	}
	src.set(lease.Journal())
	return lease, h, nil
}

// runEnded is takeAndRead's refusal of a run that has ended, said as it is.
type runEnded struct{ err error }

func (e runEnded) Error() string { return e.err.Error() }

// journalSource reads the rows of the journal it was last set to.
type journalSource struct{ j atomic.Pointer[store.Journal] }

func (s *journalSource) set(j store.Journal) { s.j.Store(&j) }

func (s *journalSource) each(from uint64, limit int, fn func(*journal.Row) error) error {
	return (*s.j.Load()).Each(from, limit, fn)
}

// readJournal reads a run's journal, by each, a page at a time into a History that keeps no
// rows of the calls that ended (replay.ReadPages): nil when the journal is empty.
func readJournal(run string, each replay.Source, budget int) (*replay.History, error) {
	h, readErr, err := replay.ReadPagesFrom(each, budget)
	if readErr != nil {
		return nil, errs.New(errs.IncompatibleSchema, "run %s: its journal cannot be read", run).Wrap(readErr)
	}
	return h, err
}

// logError writes the full account of an error with a cause to the run's log and names the log
// in its diagnostic.
func (s *Service) logError(run string, err error) {
	var e *errs.Error
	if errors.As(err, &e) {
		if errors.Is(err, store.ErrLeaseLost) {
			// Another process may hold the run by now: its folder is not this one's to write.
			return
		}
		store.LogError(s.Store.Log(run), e)
	}
}

// Env is the environment a process that executes a run puts into its own first: what the run
// recorded (its TMPDIR). A recorded TMPDIR that is missing, not a folder or not writable is
// run_env_unusable, naming it.
func (s *Service) Env(ctx context.Context, run string) (map[string]string, error) {
	spec, err := s.Store.Spec(ctx, run)
	if err != nil {
		return nil, err
	}
	if err := runspec.CheckRecordedEnv(spec.Env); err != nil {
		return nil, errs.New(errs.RunEnvUnusable, "run %s: its run.json's env is not one crw records: %v", run, err).
			Because("start", "env_unusable", "not_started", errs.Certain).Next("crw flow delete " + run)
	}
	if tmp, ok := spec.Env["TMPDIR"]; ok {
		if err := runspec.CheckTempDir(tmp); err != nil {
			return nil, errs.New(errs.RunEnvUnusable, "run %s recorded %v; make the directory again to resume it", run, err).
				Because("start", "tmpdir_unusable", "not_started", errs.Certain).Next("make the directory " + tmp + " again")
		}
	}
	return backend.ProcessEnv(spec.Env), nil
}

// Rows reads a run's journal, while a process holds it or not.
func (s *Service) Rows(ctx context.Context, run string) ([]journal.Row, error) {
	var rows []journal.Row
	err := s.Store.Rows(ctx, run, 1, func(r *journal.Row) error {
		rows = append(rows, *r)
		return nil
	})
	return rows, err
}

// DeleteOptions are how Delete removes a run.
type DeleteOptions struct {
	// KeepRefs keeps the run's refs (refs/crw/flow/<run>/: its nodes' commits) in its
	// repository.
	KeepRefs bool
}

// Delete removes a run that no process holds: first what it left in its repository (every
// worktree under its folder, registered, locked or half made, and its refs unless
// opts.KeepRefs), then the run itself. A repository that is gone has nothing of it left to
// remove.
func (s *Service) Delete(ctx context.Context, run string, opts DeleteOptions) error {
	spec, err := s.Store.Spec(ctx, run)
	var cleanup func(dir string) error
	if err == nil && spec.Repo != "" {
		cleanup = func(dir string) error { return removeFromRepo(ctx, run, spec.Repo, dir, opts.KeepRefs) }
	}
	return s.Store.Delete(ctx, run, cleanup)
}

// CollectFiles removes the workflow files no run names any more (after a delete or a prune):
// those put in the last ten minutes are spared, as a run being created puts its files first.
func (s *Service) CollectFiles(ctx context.Context) (int, error) {
	c, ok := s.Store.(store.FileCollector)
	if !ok {
		return 0, nil
	}
	return c.CollectFiles(ctx, 10*time.Minute)
}

// removeFromRepo removes a run's worktrees (under its folder dir) and, unless keepRefs, its
// refs from the repository at repoDir.
func removeFromRepo(ctx context.Context, run, repoDir, dir string, keepRefs bool) error {
	if _, err := os.Stat(repoDir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	repo, err := workspace.Open(ctx, repoDir)
	if errors.Is(err, workspace.ErrNotRepository) {
		return nil
	}
	if err != nil {
		return errs.New(errs.CapabilityUnavailable, "run %s: its repository %s cannot be opened to remove its worktrees and refs", run, repoDir).Wrap(err).
			Because("delete", "worktree_failed", "not_started", errs.Certain).Next("fix the repository, or crw flow delete " + run + " once it opens")
	}
	if dir != "" {
		root := filepath.Join(dir, "worktrees")
		if err := repo.RemoveWorktreesUnder(ctx, root, nil); err != nil {
			return errs.New(errs.CapabilityUnavailable, "run %s: its worktrees under %s cannot be removed from %s", run, root, repo.Dir).Wrap(err).
				Because("delete", "worktree_failed", "not_started", errs.Certain).Next("git -C " + repo.Dir + " worktree list, then crw flow delete " + run)
		}
	}
	if !keepRefs {
		if err := repo.DeleteRefsUnder(ctx, placer.RunRefs(run)); err != nil {
			return errs.New(errs.CapabilityUnavailable, "run %s: its refs %s cannot be deleted from %s", run, placer.RunRefs(run), repo.Dir).Wrap(err).
				Because("delete", "worktree_failed", "not_started", errs.Certain).Next("crw flow delete --keep-refs " + run + " keeps them")
		}
	}
	return nil
}

// Shadow replays a script against a recorded run with no backend: the run's journal when run is
// not "", else opts.Rows (a trace).
func (s *Service) Shadow(ctx context.Context, run string, opts shadow.Options) (*shadow.Report, error) {
	if run != "" {
		shadow.Warm(opts)
		h, err := replay.ReadPagesWithin(s.rowSource(ctx, run), s.replayBudget())
		if err != nil {
			return nil, err
		}
		if h == nil {
			return nil, errs.New(errs.IncompatibleSchema, "run %s: its journal has no rows", run)
		}
		if err := s.asRecorded(ctx, run, h, &opts); err != nil {
			return nil, err
		}
	}
	return shadow.Run(ctx, opts)
}

// asRecorded gives a shadow of run its record, h, and what a process that resumes the run
// applies: its spec's limits, with the changes h records, and no repository where the run has
// none. The shadow replays as the run did.
func (s *Service) asRecorded(ctx context.Context, run string, h *replay.History, opts *shadow.Options) error {
	spec, err := s.Store.Spec(ctx, run)
	if err != nil {
		return err
	}
	opts.History, opts.Limits, opts.NoRepository = h, withChanges(spec, h.Changes).Limits, spec.Repo == ""
	return nil
}

// errEnoughRows stops a read of rows that has read as many as it was asked for.
var errEnoughRows = errors.New("enough rows")

// rowSource reads a run's rows through the store, whether a process holds the run or not: a
// replay.Source for a History of a run this process does not hold.
func (s *Service) rowSource(ctx context.Context, run string) replay.Source {
	if pages, ok := s.Store.(store.PageReader); ok {
		return func(from uint64, limit int, fn func(*journal.Row) error) error {
			return pages.RowsPage(ctx, run, from, limit, fn)
		}
	}
	return func(from uint64, limit int, fn func(*journal.Row) error) error {
		n := 0
		err := s.Store.Rows(ctx, run, from, func(r *journal.Row) error {
			if limit > 0 && n == limit {
				return errEnoughRows
			}
			n++
			return fn(r)
		})
		if errors.Is(err, errEnoughRows) {
			return nil
		}
		return err
	}
}

// OnThisHost refuses a run tied to another host (store.Spec.Host): its steps, replies and
// owner binding are in that host's state folder, which no process here can reach.
func (s *Service) OnThisHost(spec *store.Spec) error {
	if spec.Host == "" || spec.Host == s.Host {
		return nil
	}
	return errs.New(errs.InvalidRequest, "run %s is a %s run of the host %s: its steps and its owner's binding are in that host's state folder", spec.Run, spec.Backend, spec.Host).
		Next("run crw on the host " + spec.Host + " (its state folder and this store) to go on with it or to answer its steps")
}

// stateOf is the state folder of a run whose folder on this host is runDir: StateDir, else
// the one of <state>/flow/<run>, "" for another.
func (s *Service) stateOf(runDir string) string {
	if s.StateDir != "" {
		return s.StateDir
	}
	if runDir == "" || filepath.Base(filepath.Dir(runDir)) != "flow" {
		return ""
	}
	return filepath.Dir(filepath.Dir(runDir))
}

// errFirstRow stops a read of a journal after its first row.
var errFirstRow = errors.New("first row read")

// startedRow returns a journal's first row when it is the started row, else nil: the started
// row is written before any other.
func (s *Service) startedRow(ctx context.Context, run string) (*journal.Row, error) {
	var first *journal.Row
	err := s.Store.Rows(ctx, run, 1, func(r *journal.Row) error {
		cp := *r
		first = &cp
		return errFirstRow
	})
	if err != nil && !errors.Is(err, errFirstRow) {
		return nil, err
	}
	if first == nil || first.Type != journal.TypeStarted {
		return nil, nil
	}
	return first, nil
}
