// Package engine runs workflows: it implements the script's host, runs each agent call through
// its state machine against a backend, and journals every step.
package engine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/lib"
	"github.com/crw-dev/crw/runtime/loader"
	"github.com/crw-dev/crw/runtime/vm"
)

// Run statuses, in the ended row and the command's output.
const (
	RunCompleted = "completed" // the workflow returned
	RunFailed    = "failed"    // the workflow threw
	RunPaused    = "paused"    // a usage or rate limit paused the run
	RunCancelled = "cancelled"
)

// Options is one run's configuration.
type Options struct {
	StateDir     string
	Workflow     string
	Input        json.RawMessage // nil: null
	Backend      backend.Backend
	Answers      string // the answers file of the fake backend, recorded in run.json
	Roles        RoleTable
	Pool         int
	BudgetTokens int64
	LibDirs      []string
	// Log receives the script's console and crw.log lines.
	Log io.Writer
	// OnEvent receives live progress; it is called from many goroutines.
	OnEvent func(Event)
	// OnStart is called with the run id once run.json and the journal exist.
	OnStart func(run string)
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

// run is one live run: the host of its script.
type run struct {
	id      string
	opts    Options
	dir     string
	j       *journal.Journal
	backend backend.Backend
	ctx     context.Context
	fail    context.CancelCauseFunc
	pool    *pool
	schemas schemaCache

	flushKick chan struct{}
	rng       *rand.Rand
	clock     time.Time // the script's clock; touched on the loop goroutine only
	started   time.Time
	wg        sync.WaitGroup

	mu       sync.Mutex
	calls    map[string]*call
	issued   int
	inflight map[*call]struct{}
	paused   bool
	holds    map[string]string // node → the call whose unknown outcome holds it
	spent    journal.Tokens
	counts   Counts
	dirty    bool
}

// Run loads the workflow, starts a run and runs it to its end in this process.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if opts.Pool <= 0 {
		opts.Pool = 4
	}
	if opts.Input == nil {
		opts.Input = json.RawMessage("null")
	}
	if !json.Valid(opts.Input) {
		return nil, Errorf(CodeInvalidRequest, "--input: not JSON")
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	state, err := StateDir(opts.StateDir)
	if err != nil {
		return nil, err
	}
	wf, err := filepath.Abs(opts.Workflow)
	if err != nil {
		return nil, Errorf(CodeInvalidRequest, "workflow %s: %v", opts.Workflow, err)
	}
	now := time.Now().UTC()
	r := &run{
		id:        NewRunID(now),
		opts:      opts,
		backend:   opts.Backend,
		pool:      newPool(opts.Pool),
		calls:     map[string]*call{},
		inflight:  map[*call]struct{}{},
		holds:     map[string]string{},
		counts:    Counts{},
		clock:     now,
		started:   now,
		flushKick: make(chan struct{}, 1),
	}
	r.rng = rand.New(rand.NewPCG(seed(r.id, "crw.random"), 0))

	// Load before anything is written: a workflow that does not load leaves no run behind.
	script, err := vm.New(vm.Config{
		Workflow: wf,
		LibDirs:  opts.LibDirs,
		Builtin:  lib.FS,
		Input:    opts.Input,
		Seed:     seed(r.id, "Math.random"),
		Host:     r,
	})
	if err != nil {
		return nil, loadError(err)
	}

	r.dir = RunDir(state, r.id)
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return nil, Errorf(CodeCapabilityUnavailable, "cannot make the run folder %s: %v", r.dir, err)
	}
	spec := RunSpec{
		Schema: RunSchema, Run: r.id, Workflow: wf, ScriptDigest: script.Digest(),
		Backend: opts.Backend.Name(), Answers: opts.Answers, Input: opts.Input, Pool: opts.Pool,
		BudgetTokens: opts.BudgetTokens, Roles: opts.Roles, LibDirs: opts.LibDirs,
		Env: map[string]string{"TMPDIR": os.TempDir()}, CreatedAt: now,
	}
	if err := writeFileAtomic(filepath.Join(r.dir, RunFile), spec); err != nil {
		os.RemoveAll(r.dir)
		return nil, Errorf(CodeCapabilityUnavailable, "cannot write %s: %v", filepath.Join(r.dir, RunFile), err)
	}
	j, err := journal.Create(filepath.Join(r.dir, JournalFile), r.id)
	if err != nil {
		os.RemoveAll(r.dir)
		return nil, Errorf(CodeCapabilityUnavailable, "cannot create the journal: %v", err)
	}
	r.j = j
	defer j.Close()

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.ctx, r.fail = runCtx, cancel

	if _, err := j.Write(&journal.Row{
		Type: journal.TypeStarted, At: now, Run: r.id, Backend: r.backend.Name(), Workflow: wf,
		ScriptDigest: script.Digest(), RolePairs: opts.Roles, PolicyDigest: opts.Roles.Digest(),
		Process: fmt.Sprintf("pid-%d", os.Getpid()), Pool: opts.Pool, BudgetTokens: opts.BudgetTokens,
		Input: opts.Input,
	}); err != nil {
		return nil, Errorf(CodeCapabilityUnavailable, "cannot write the journal: %v", err)
	}
	if opts.OnStart != nil {
		opts.OnStart(r.id)
	}
	stopPublish := r.publishLoop()
	stopFlush := r.flushLoop()
	defer stopFlush()
	r.event(Event{Kind: "started"})

	out, runErr := script.Run(runCtx)
	r.interruptAll("cancelled")
	r.wg.Wait()

	res := &Result{Run: r.id}
	ended := &journal.Row{Type: journal.TypeEnded}
	var se *vm.ScriptError
	switch {
	case runErr == nil:
		res.Result = out
		res.Status = RunCompleted
		ended.Result = out
	case errors.As(runErr, &se):
		res.Status = RunFailed
		res.Error = &journal.RunError{Message: se.Message, Stack: se.Stack, Code: se.Code}
		ended.Error = res.Error
	default:
		cause := context.Cause(runCtx)
		if cause == nil || errors.Is(cause, context.Canceled) {
			cause = runErr
		}
		stopPublish()
		r.publish("ended", "")
		if ctx.Err() != nil {
			return nil, Errorf(CodeRunUnavailable, "the run %s was interrupted: %v", r.id, ctx.Err())
		}
		return nil, Errorf(CodeCapabilityUnavailable, "run %s: %v", r.id, cause)
	}
	r.mu.Lock()
	if r.paused && res.Status == RunCompleted {
		res.Status = RunPaused
	}
	res.Calls = r.countsCopy()
	r.mu.Unlock()
	ended.Status = res.Status
	if _, err := j.Write(ended); err != nil {
		return nil, Errorf(CodeCapabilityUnavailable, "cannot write the journal: %v", err)
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
		return &Error{Code: CodeInvalidRequest, Message: fixedMessages[CodeInvalidRequest], Detail: le.Error(), Exit: ExitBadInput, Err: err}
	}
	var se *vm.ScriptError
	if errors.As(err, &se) {
		return &Error{Code: CodeInvalidRequest, Message: fixedMessages[CodeInvalidRequest], Detail: "the workflow threw while loading: " + se.Message + "\n" + se.Stack, Exit: ExitBadInput, Err: err}
	}
	return &Error{Code: CodeInvalidRequest, Message: fixedMessages[CodeInvalidRequest], Detail: err.Error(), Exit: ExitBadInput, Err: err}
}

// seed derives a run's random streams from its id, so a replay draws the same numbers.
func seed(runID, stream string) uint64 {
	h := sha256.Sum256([]byte("crw.seed.v1\x00" + stream + "\x00" + runID))
	return binary.BigEndian.Uint64(h[:8])
}

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

func (r *run) countsCopy() Counts {
	c := Counts{}
	for k, v := range r.counts {
		c[k] = v
	}
	return c
}

func (r *run) event(e Event) {
	r.mu.Lock()
	r.dirty = true
	if r.opts.OnEvent == nil {
		r.mu.Unlock()
		return
	}
	e.Run = r.id
	e.Calls = r.countsCopy()
	e.InFlight = len(r.inflight)
	e.Tokens = r.spent
	r.mu.Unlock()
	r.opts.OnEvent(e)
}

// Now implements the script's clock: the time of the last step the script has seen.
func (r *run) Now() time.Time { return r.clock }

// Random implements crw.random.
func (r *run) Random() float64 { return r.rng.Float64() }

// Log implements console and crw.log.
func (r *run) Log(level, message string) {
	if level == "log" || level == "info" {
		fmt.Fprintln(r.opts.Log, message)
		return
	}
	fmt.Fprintf(r.opts.Log, "%s: %s\n", level, message)
}

// TierStep implements crw.tierStep.
func (r *run) TierStep(node string) error {
	r.mu.Lock()
	holder, held := r.holds[node]
	r.mu.Unlock()
	if held {
		return &callError{code: "recovery_hold", msg: fmt.Sprintf("crw.tierStep: node %q is in recovery_hold: call %s has an unknown outcome", node, holder)}
	}
	return &callError{code: CodeCapabilityUnavailable, msg: "crw.tierStep is not supported yet"}
}

// Commit implements crw.commit.
func (r *run) Commit(node, message string) error {
	return &callError{code: CodeCapabilityUnavailable, msg: "crw.commit is not supported yet"}
}

// CheckSchema implements the strict check of schema modules.
func (r *run) CheckSchema(s []byte) []loader.Problem {
	vs, err := schema.CheckStrict(s)
	if err != nil {
		return []loader.Problem{{Rule: "invalid", Message: err.Error()}}
	}
	out := make([]loader.Problem, len(vs))
	for i, v := range vs {
		out[i] = loader.Problem{Pointer: v.Pointer, Rule: v.Rule, Message: v.Message}
	}
	return out
}

// publishLoop writes state.json whenever something changed, at most five times a second; the
// journal, not this file, is the record.
func (r *run) publishLoop() (stop func()) {
	r.publish("running", "")
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				r.mu.Lock()
				dirty := r.dirty
				r.dirty = false
				paused := r.paused
				r.mu.Unlock()
				if dirty {
					state := "running"
					if paused {
						state = "paused"
					}
					r.publish(state, "")
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-finished
		})
	}
}

func (r *run) stateNow(state, status string) RunState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return RunState{
		Schema: StateSchema, Run: r.id, State: state, Status: status, PID: os.Getpid(),
		Workflow: r.opts.Workflow, Backend: r.backend.Name(), InFlight: len(r.inflight),
		Calls: r.countsCopy(), Tokens: r.spent, LastSeq: r.j.LastSeq(), StartedAt: r.started,
		UpdatedAt: time.Now().UTC(),
	}
}

func (r *run) publish(state, status string) {
	s := r.stateNow(state, status)
	_ = writeFileAtomic(filepath.Join(r.dir, StateFile), s)
}

func (r *run) publishEnded(res *Result) {
	s := r.stateNow("ended", res.Status)
	s.Result = res.Result
	s.Error = res.Error
	_ = writeFileAtomic(filepath.Join(r.dir, StateFile), s)
}
