// Package engine runs workflows: it implements the script's host, runs each agent call through
// its state machine against a backend, and journals every step. A run is created once and
// executed by one process at a time; a resumed run executes its script from the top over the
// journal, on the same code path as a live one.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/lib"
	"github.com/crw-dev/crw/runtime/loader"
	"github.com/crw-dev/crw/runtime/modules/agent"
	"github.com/crw-dev/crw/runtime/vm"
	"github.com/crw-dev/crw/store/local/journalfile"
)

// Run statuses, in the ended row and the command's output.
const (
	RunCompleted = "completed" // the workflow returned
	RunFailed    = "failed"    // the workflow threw
	RunPaused    = "paused"    // a usage or rate limit paused the run
	RunCancelled = "cancelled"
)

// Options is what a run is created with; run.json records it.
type Options struct {
	StateDir     string
	Workflow     string
	Input        json.RawMessage   // nil: null
	Backend      string            // a name of Backends (default fake)
	BackendOpts  map[string]string // the backend's options (answers, codex, ...)
	Backends     *backend.Registry
	Roles        RoleTable
	Pool         int
	BudgetTokens int64
	LibDirs      []string

	// Execution of a foreground run (Run): see ExecOptions.
	Log     io.Writer
	OnEvent func(Event)
	OnStart func(run string)
}

// ExecOptions is how one process executes a run.
type ExecOptions struct {
	// Log receives the script's console and crw.log lines; muted while the script replays
	// calls the journal already answered.
	Log io.Writer
	// OnEvent receives live progress; it is called from many goroutines.
	OnEvent func(Event)
	// OnStart is called once the process holds the run and its started row is durable.
	OnStart func(run string)
	// Backends builds the backend the run's spec names.
	Backends *backend.Registry
	// Backend replaces the backend the spec names (tests).
	Backend backend.Backend
}

// Event is one step of live progress.
type Event struct {
	Kind     string // started, call_started, call_ended, ended
	Run      string
	Call     string
	Role     string
	Node     string
	Status   string
	Reason   string
	Replayed bool // the call's outcome came from the journal
	Calls    Counts
	InFlight int
	Tokens   journal.Tokens
}

// Result is what a finished run reports.
type Result struct {
	Run    string            `json:"run"`
	Status string            `json:"status"`
	Result json.RawMessage   `json:"result"`
	Error  *journal.RunError `json:"error"`
	Calls  Counts            `json:"calls"`
}

// run is one process's execution of a run: the host of its script.
type run struct {
	id      string
	spec    *RunSpec
	x       ExecOptions
	dir     string
	j       *journalfile.Journal
	backend backend.Backend
	roles   RoleTable
	hist    *history
	ctx     context.Context
	fail    context.CancelCauseFunc
	pool    *pool
	rng     *rand.Rand
	clock   time.Time // the script's clock; touched on the loop goroutine only
	started time.Time
	wg      sync.WaitGroup
	schemas schemaCache

	flushKick   chan struct{}
	publishKick chan struct{}

	mu        sync.Mutex
	calls     map[string]*call
	issued    int
	nextID    int // the last numeric call id given
	inflight  map[*call]struct{}
	paused    bool
	holds     map[string]string // node → the call whose unknown outcome holds it
	spent     journal.Tokens
	counts    Counts
	dirty     bool
	offRecord bool // a call held by a pause ran again: the script may now leave the record
	caughtUp  bool // every recorded completion was delivered
	replayed  int  // settled calls delivered from the journal
	heldBack  []delivery
	outbox    []Event    // call_ended events not sent yet
	eventsMu  sync.Mutex // keeps events in the order they were queued
	continued map[*recorded]bool
}

// Run creates a run and executes it in this process.
func Run(ctx context.Context, opts Options) (*Result, error) {
	id, err := Create(opts)
	if err != nil {
		return nil, err
	}
	return Execute(ctx, opts.StateDir, id, ExecOptions{Log: opts.Log, OnEvent: opts.OnEvent, OnStart: opts.OnStart, Backends: opts.Backends})
}

// Create checks a workflow and its options and writes the run's folder: run.json and an empty
// journal. Nothing is written when the workflow does not load.
func Create(opts Options) (string, error) {
	if opts.Pool <= 0 {
		opts.Pool = 4
	}
	if opts.Input == nil {
		opts.Input = json.RawMessage("null")
	}
	if !json.Valid(opts.Input) {
		return "", errs.New(errs.InvalidRequest, "--input: not JSON")
	}
	if opts.Backend == "" {
		opts.Backend = "fake"
	}
	if opts.Roles == nil {
		opts.Roles = RoleTable{}
	}
	state, err := StateDir(opts.StateDir)
	if err != nil {
		return "", err
	}
	wf, err := filepath.Abs(opts.Workflow)
	if err != nil {
		return "", errs.New(errs.InvalidRequest, "workflow %s: %v", opts.Workflow, err)
	}
	// Checked as the user named it, so an error names the file as they wrote it.
	backendOpts, err := opts.Backends.Prepare(opts.Backend, opts.BackendOpts)
	if err != nil {
		return "", err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return "", errs.New(errs.CapabilityUnavailable, "no working directory: %v", err)
	}
	tmp, err := usableTempDir()
	if err != nil {
		return "", err
	}
	now := time.Now().UTC()
	id := NewRunID(now)

	// Load before anything is written: a workflow that does not load leaves no run behind.
	digest, err := loadOnly(wf, opts.LibDirs, opts.Input)
	if err != nil {
		return "", err
	}
	dir := RunDir(state, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", errs.New(errs.CapabilityUnavailable, "cannot make the run folder %s: %v", dir, err)
	}
	spec := RunSpec{
		Schema: RunSchema, Run: id, Workflow: wf, ScriptDigest: digest,
		Backend: opts.Backend, BackendOptions: backendOpts, Cwd: cwd, Input: opts.Input, Pool: opts.Pool,
		BudgetTokens: opts.BudgetTokens, Roles: opts.Roles, LibDirs: opts.LibDirs,
		Env: map[string]string{"TMPDIR": tmp}, CreatedAt: now,
	}
	j, err := journalfile.Create(filepath.Join(dir, JournalFile), id)
	if err != nil {
		os.RemoveAll(dir)
		return "", errs.New(errs.CapabilityUnavailable, "cannot create the journal: %v", err)
	}
	if err := j.Close(); err != nil {
		os.RemoveAll(dir)
		return "", errs.New(errs.CapabilityUnavailable, "cannot create the journal: %v", err)
	}
	// run.json last: a folder without it is no run.
	if err := writeFileAtomic(filepath.Join(dir, RunFile), spec); err != nil {
		os.RemoveAll(dir)
		return "", errs.New(errs.CapabilityUnavailable, "cannot write %s: %v", filepath.Join(dir, RunFile), err)
	}
	return id, nil
}

// loadOnly loads a workflow in a throwaway VM to report load errors and its digest.
func loadOnly(wf string, libs []string, input json.RawMessage) (string, error) {
	h := &loadHost{}
	script, err := vm.New(vm.Config{Workflow: wf, LibDirs: libs, Builtin: lib.FS, Input: input, Host: h})
	if err != nil {
		return "", loadError(err)
	}
	return script.Digest(), nil
}

// warn records a warning of the run that belongs to no call.
func (r *run) warn(reason, detail string) {
	r.j.Append(&journal.Row{Type: journal.TypeWarning, Reason: reason, Detail: detail})
	r.flushSoon()
}

// Execute runs a run in this process: it takes the run's locks, replays what the journal
// already holds and goes on live to the end.
func Execute(ctx context.Context, stateDir, id string, x ExecOptions) (res *Result, err error) {
	state, err := StateDir(stateDir)
	if err != nil {
		return nil, err
	}
	if !ValidRunID(id) {
		return nil, errs.New(errs.InvalidRequest, "%q is not a run id (like 20261130-052301-a1b2c3)", id)
	}
	spec, err := ReadSpec(state, id)
	if err != nil {
		return nil, err
	}
	if x.Log == nil {
		x.Log = io.Discard
	}
	restoreEnv, err := applyEnv(spec)
	if err != nil {
		return nil, err
	}
	defer restoreEnv()

	dir := RunDir(state, id)
	locks, err := lockRun(dir, id)
	if err != nil {
		return nil, err
	}
	defer locks.release()

	j, err := journalfile.Open(filepath.Join(dir, JournalFile))
	switch {
	case errors.Is(err, journalfile.ErrLocked):
		return nil, errs.New(errs.RunUnavailable, "run %s: its journal is held by another process", id)
	case errors.Is(err, journalfile.ErrCorrupt):
		return nil, errs.New(errs.IncompatibleSchema, "run %s: the journal %s is damaged and was left as it is: %v", id, filepath.Join(dir, JournalFile), err)
	case err != nil:
		return nil, errs.New(errs.RunUnavailable, "run %s: cannot open the journal: %v", id, err)
	}
	defer j.Close()
	armCrashPoint(j)
	rows, err := j.Rows()
	if err != nil {
		return nil, errs.New(errs.IncompatibleSchema, "run %s: cannot read the journal: %v", id, err)
	}

	now := time.Now().UTC()
	r := &run{
		id: id, spec: spec, x: x, dir: dir, j: j, roles: spec.Roles,
		pool: newPool(spec.Pool), calls: map[string]*call{}, inflight: map[*call]struct{}{},
		holds: map[string]string{}, counts: Counts{}, clock: now, started: now,
		flushKick: make(chan struct{}, 1), publishKick: make(chan struct{}, 1), continued: map[*recorded]bool{},
	}
	if r.roles == nil {
		r.roles = RoleTable{}
	}
	be := x.Backend
	if be == nil {
		be, err = x.Backends.Open(spec.Backend, backend.Config{
			Run: id, Options: spec.BackendOptions, Cwd: spec.Cwd, Env: spec.Env, Dir: dir, Warn: r.warn,
		})
		if err != nil {
			return nil, err
		}
	}
	defer be.Close()
	r.backend = be
	r.rng = rand.New(rand.NewPCG(seed(id, "crw.random"), 0))
	if len(rows) > 0 {
		h, err := readHistory(rows)
		if err != nil {
			return nil, err
		}
		if h.ended != nil {
			return nil, errs.New(errs.RunUnavailable, "run %s has ended (%s): there is nothing to resume", id, h.ended.Status)
		}
		if h.backend != "" && h.backend != be.Name() {
			return nil, errs.New(errs.InvalidRequest, "run %s ran on backend %s; it cannot resume on %s", id, h.backend, be.Name())
		}
		h.buildResults(h.order)
		r.hist = h
		r.clock = h.clockStart()
		r.holds = h.holds
		r.spent = h.spent
		r.nextID = h.maxCall
	}

	script, err := vm.New(vm.Config{
		Workflow: spec.Workflow, LibDirs: spec.LibDirs, Builtin: lib.FS, Input: spec.Input,
		Seed: seed(id, "Math.random"), Host: r,
	})
	if err != nil {
		return nil, loadError(err)
	}

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.ctx, r.fail = runCtx, cancel

	if _, err := j.Write(&journal.Row{
		Type: journal.TypeStarted, At: now, Run: id, Backend: be.Name(), Workflow: spec.Workflow,
		ScriptDigest: script.Digest(), RolePairs: r.roles, PolicyDigest: r.roles.Digest(),
		Process: locks.token, Pool: spec.Pool, BudgetTokens: spec.BudgetTokens, Input: spec.Input,
	}); err != nil {
		return nil, errs.New(errs.CapabilityUnavailable, "cannot write the journal: %v", err)
	}
	stopPublish := r.publishLoop()
	defer stopPublish()
	stopFlush := r.flushLoop()
	defer stopFlush()
	if x.OnStart != nil {
		x.OnStart(id)
	}
	r.event(Event{Kind: "started"})

	out, runErr := script.Run(runCtx)
	cause := context.Cause(runCtx)
	cancelled := ctx.Err() != nil && !isFailure(cause)
	// Calls still in flight (the script threw, or the run was cancelled) end held cancelled.
	r.interruptAll("cancelled")
	r.wg.Wait()
	if cause != nil && isFailure(cause) {
		// The run cannot go on (a divergence, a journal that failed): no ended row, so a fixed
		// script or a healthy disk can resume it.
		err := failureError(id, cause)
		stopPublish()
		r.publishStopped(err)
		return nil, err
	}
	r.supersedeUnmade()

	res = &Result{Run: id}
	ended := &journal.Row{Type: journal.TypeEnded}
	var se *vm.ScriptError
	switch {
	case cancelled:
		res.Status = RunCancelled
		ended.Error = &journal.RunError{Message: "the run was cancelled", Code: string(errs.RunUnavailable), Reason: "cancelled"}
		res.Error = ended.Error
	case runErr == nil:
		res.Result = out
		res.Status = RunCompleted
		ended.Result = out
	case errors.As(runErr, &se):
		res.Status = RunFailed
		res.Error = &journal.RunError{Message: se.Message, Stack: se.Stack, Code: se.Code, Reason: se.Reason}
		ended.Error = res.Error
	default:
		err := errs.New(errs.CapabilityUnavailable, "run %s: %v", id, runErr)
		stopPublish()
		r.publishStopped(err)
		return nil, err
	}
	r.mu.Lock()
	if r.paused && res.Status == RunCompleted {
		res.Status = RunPaused
	}
	res.Calls = r.countsCopy()
	r.mu.Unlock()
	ended.Status = res.Status
	if _, err := j.Write(ended); err != nil {
		return nil, errs.New(errs.CapabilityUnavailable, "cannot write the journal: %v", err)
	}
	stopPublish()
	r.publishEnded(res)
	r.event(Event{Kind: "ended", Status: res.Status})
	return res, nil
}

// loadError turns a workflow that does not load into invalid input naming the place.
func loadError(err error) error {
	var le *loader.LoadError
	if errors.As(err, &le) {
		return errs.New(errs.InvalidRequest, "%s", le.Error()).Wrap(err)
	}
	var se *vm.ScriptError
	if errors.As(err, &se) {
		return errs.New(errs.InvalidRequest, "the workflow threw while loading: %s\n%s", se.Message, se.Stack).Wrap(err)
	}
	return errs.New(errs.InvalidRequest, "%v", err).Wrap(err)
}

// failure is a reason the run cannot go on, as opposed to a cancel.
type failure struct{ err error }

func (f failure) Error() string { return f.err.Error() }
func (f failure) Unwrap() error { return f.err }

func isFailure(err error) bool {
	var f failure
	return errors.As(err, &f)
}

func failureError(run string, cause error) error {
	var d *DivergenceError
	if errors.As(cause, &d) {
		return errs.New(errs.RevisionConflict, "run %s: %s", run, d.Summary()).Wrap(d).
			Because("replay", "divergence", "stopped", errs.Certain).
			Next("resume it with the script it was recorded with; crw flow shadow shows what changed")
	}
	return errs.New(errs.CapabilityUnavailable, "run %s: %v", run, cause)
}

// stop ends the run for a reason it cannot go on with.
func (r *run) stop(err error) { r.fail(failure{err}) }

// loadHost is the host of a load-only VM: loading evaluates modules, and nothing more may run.
type loadHost struct{}

func (loadHost) Call(req agent.Request, settle agent.Settle) error {
	return errs.Throw(errs.InvalidRequest, "", "agent.call cannot run while the workflow loads: call it from the entry function")
}
func (loadHost) Now() time.Time                        { return time.Unix(0, 0).UTC() }
func (loadHost) Random() float64                       { return 0 }
func (loadHost) Log(level, message string)             {}
func (loadHost) TierStep(node string) error            { return errNotWhileLoading }
func (loadHost) Commit(node, message string) error     { return errNotWhileLoading }
func (loadHost) CheckSchema(s []byte) []loader.Problem { return checkSchema(s) }

var errNotWhileLoading = errs.Throw(errs.InvalidRequest, "", "not available while the workflow loads")

// ProcessGCPercent is the garbage collector's target in crw's process. A run's live heap is
// small and nearly all it allocates (parsed rows, call results) dies young, so collecting at
// 100% growth spends a quarter of a replay in the collector; memory stays bounded by the small
// live heap all the same.
const ProcessGCPercent = 300
