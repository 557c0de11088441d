// Package runner executes one run in this process, on the run's lease. It is the host of the
// run's script (vm.Host): it takes every agent call through its state machine (the gate, its
// turns on the backend, validation and the one repair, one terminal row) and journals each step.
// A run an earlier process left goes on by replay, on the same code path: the script runs from
// the top, and engine/replay answers the calls the journal settled, in the order it recorded,
// while the calls it left open go on from their last row.
//
// Its parts live beneath it: effects (crw.commit, crw.tierStep), decisions (crw.decide,
// crw.effect, verdicts and holds), progress (events and the published status), turns (what an
// earlier process sent, the repair turn, the conversation), pool, scriptlog, ends, runwarn. What
// stays here, near 2,000 lines, is one call's way through its states and the process around
// it (lease, flush loop, contexts, the end): a call's state is shared by its gate, its turns, its
// recorder and its delivery under the runner's lock, and cutting those apart would put that
// lock on both sides of a package boundary.
package runner

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/callstate"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/engine/placer"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/engine/runner/effects"
	"github.com/crw-dev/crw/engine/runner/ends"
	"github.com/crw-dev/crw/engine/runner/pool"
	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/engine/runner/readback"
	"github.com/crw-dev/crw/engine/runner/runwarn"
	"github.com/crw-dev/crw/engine/runner/scriptlog"
	"github.com/crw-dev/crw/engine/runspec"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/lib"
	"github.com/crw-dev/crw/runtime/loader"
	"github.com/crw-dev/crw/runtime/modules/agent"
	"github.com/crw-dev/crw/runtime/vm"
	"github.com/crw-dev/crw/store"
)

// Config is one process's execution of a run.
type Config struct {
	Spec *store.Spec
	// Code, when not nil, is the run's workflow as its store keeps it (store.Spec.CodeKept): the
	// files it loads, by path; the disk is not read.
	Code    map[string][]byte
	Lease   store.Lease
	Backend backend.Backend
	// History is what the run's journal held when the lease was taken; nil when it held
	// nothing (the run's first process).
	History *replay.History
	// Console receives the script's console and crw.log lines; they are muted while the script
	// replays calls the journal answered (the earlier process printed them already).
	Console io.Writer
	// OnEvent receives live progress; it is called from many goroutines, one event at a time.
	OnEvent func(progress.Event)
	// OnStart is called once the run's started row is durable.
	OnStart func(run string)
	// Warnings, when not nil, is where the backend's warnings that belong to no call go: the
	// runner journals them from its started row on.
	Warnings *runwarn.Sink
	// Log, when not nil, is the run's log: the script's console and crw.log lines are kept
	// there too (crw flow logs, follow).
	Log store.Log
	// DryRun is a rehearsal (crw flow check): every call works in the run's cwd (no worktree),
	// crw.commit commits nothing and answers a stand-in, and crw.decide is answered at once
	// with an answer synthesized from its schema.
	DryRun bool
}

// runner is one process's execution of a run: the host of its script.
type runner struct {
	dryRun    bool
	scriptLog *scriptlog.Log // the script's lines: the console and the run's log, within its bound
	// inReplayed counts the recorded results the script is taking (loop goroutine only): its
	// lines meanwhile were printed by the process that saw those calls end.
	inReplayed int
	id         string
	spec       *store.Spec
	lease      store.Lease
	j          store.Journal
	backend    backend.Backend
	roles      inputs.RoleTable
	schemas    inputs.Schemas
	h          *replay.History // nil for the run's first process
	replay     *replay.Replayer
	console    io.Writer
	progress   *progress.Progress
	pool       *pool.Pool
	rng        *rand.Rand
	clock      time.Time // the script's clock; touched on the loop goroutine only
	wake       func()    // makes a waiting script look again; set once, before the script runs
	// batch starts the calls the script issues together, together (touched on the loop
	// goroutine only; its Post is set once before the script runs).
	batch pool.Batch

	ctx  context.Context
	fail context.CancelCauseFunc
	// stopCtx ends only when the process stops (r.stop): what must not be cut short by a
	// pause, a cancel or a deadline (git making a worktree) runs under it.
	stopCtx   context.Context
	wg        sync.WaitGroup
	flushKick chan struct{}

	// The calls and the gate.
	mu    sync.Mutex
	calls map[string]*call      // calls whose result the script has not been given yet
	ended map[string]*endedCall // the others (endedOf), but those replayedEnded has
	// replayedEnded: bit i, the recorded call at issue index i was given to the script from
	// the record, and the History has all an endedCall would keep of it (endedOf): a resume of
	// 100,000 recorded calls keeps 12.5 kB of them, not 15 MB of endedCalls.
	replayedEnded []uint64
	nextID        int // the last numeric call id given
	inflight      map[*call]struct{}
	paused        bool
	// budgetHeld: a call was held because the run's tokens are spent (its budget), and
	// hostBudgetHeld because the host's session budget is: the run ends paused, and a resume
	// runs the call again.
	budgetHeld     bool
	hostBudgetHeld bool
	spent          journal.Tokens

	// placer places the calls' directories and keeps the nodes' worktrees; made in Run, once
	// the process's stop context is.
	placer *placer.Placer
	// fx makes the script's crw.commit and crw.tierStep; made in Run with the placer.
	fx *effects.Effects

	// book keeps the run's decisions and verdicts, and the holds of calls whose outcome is
	// unknown (engine/runner/decisions); made in newRunner.
	book *decisions.Book
	// late are the calls under way when the workflow returned (Returned; loop goroutine).
	late []agent.Unobserved
}

var (
	_ vm.Host     = (*runner)(nil)
	_ vm.Idler    = (*runner)(nil)
	_ vm.Waker    = (*runner)(nil)
	_ vm.Poster   = (*runner)(nil)
	_ vm.Returner = (*runner)(nil)
)

// Warm starts compiling the workflow of the run spec describes, for Run to find it compiled
// (vm.Warm): the caller takes the run and reads its journal meanwhile. A run whose code the
// store keeps is loaded from there, read once its journal is: it is not warmed.
func Warm(spec *store.Spec) {
	if !spec.CodeKept {
		vm.Warm(vm.Config{Workflow: spec.Workflow, LibDirs: spec.LibDirs, Builtin: lib.FS})
	}
}

// Run executes a run in this process: it writes the started row, runs the script over the
// journal's history and live to its end, and writes the ended row. It returns the run's end;
// an error when the run could not go on (a workflow that does not load, a divergence, a journal
// that failed, a lease that was lost): then it has no ended row, and a later process can resume
// it.
func Run(ctx context.Context, cfg Config) (*store.Status, error) {
	r := newRunner(cfg)
	defer r.replay.Stop()
	defer func() { r.scriptLog.Close(r.stopped() == nil) }()
	script, err := vm.New(vm.Config{
		Workflow: r.spec.Workflow, LibDirs: r.spec.LibDirs, Builtin: lib.FS, Input: r.spec.Input,
		Seed: Seed(r.id, "Math.random"), Host: r, Limits: runspec.VMLimits(r.spec.Limits), Context: ctx, Kept: cfg.Code,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, r.stopError(errStoppedByCaller)
		}
		return nil, ends.LoadError(err)
	}
	runCtx, cancel, stopCancel := r.contexts(ctx)
	defer cancel(nil)
	defer stopCancel()

	// A first process's clock starts at its started row: a resume's starts there too.
	startedAt := time.Now().UTC()
	if r.h == nil {
		r.clock = startedAt
	}
	// Say which process holds the run before anything else: a process that dies from here on
	// is one that held it (crw flow start tells the two apart).
	stopPublish := r.progress.PublishLoop()
	defer stopPublish()
	stopped := func(cause error) (*store.Status, error) {
		err := r.stopError(cause)
		stopPublish()
		r.progress.PublishStopped(err)
		return nil, err
	}
	if err := r.writeStarted(script, startedAt, cfg.Warnings); err != nil {
		return stopped(err)
	}
	stopFlush := r.flushLoop()
	defer stopFlush()
	stopAnswers := r.book.Loop()
	defer stopAnswers()
	watched := r.watch(ctx, runCtx, cancel)
	if l := r.spec.Limits; l != nil && l.DeadlineMS > 0 {
		deadline := time.AfterFunc(time.Duration(l.DeadlineMS)*time.Millisecond, func() { cancel(errDeadline) })
		defer deadline.Stop()
	}
	if cfg.OnStart != nil {
		cfg.OnStart(r.id)
	}
	r.progress.Event(progress.Event{Kind: progress.EventStarted})

	out, runErr := script.Run(runCtx)
	if thrown := new(vm.ScriptError); runErr == nil || errors.As(runErr, &thrown) {
		// However the workflow ended, returned or threw.
		r.warnUnobserved(script)
	}
	why := endOf(context.Cause(runCtx))
	if stopCause := r.stopCause(why, context.Cause(runCtx)); stopCause != nil {
		// No ended row: a fixed script, a healthy disk or another process can resume the run.
		// Calls in flight are left as a crash would leave them (their intents are journaled,
		// a resume reconciles them), and not waited for: stopping means now.
		cancel(failure{stopCause})
		<-watched
		r.placer.Stop()
		return stopped(stopCause)
	}
	r.endCallsLeft(why.deadline)
	cancel(nil)
	<-watched
	if cause := context.Cause(runCtx); isFailure(cause) {
		return stopped(cause)
	}
	if !why.waitsForDecision {
		r.endUnmade(why.cancelled)
	}
	end, ended, err := r.runEnd(why, out, runErr)
	if err != nil {
		return stopped(err)
	}
	if end.Status != store.RunPaused && end.Status != store.RunWaitingDecision {
		// Before the ended row: a process that dies in between leaves a run a resume ends
		// again, and cleans up again.
		r.placer.CleanUp()
	} else {
		r.placer.DropIdle()
	}
	if _, err := r.j.Write(ended); err != nil {
		return stopped(err)
	}
	stopPublish()
	st := r.progress.PublishEnded(end)
	r.progress.Event(progress.Event{Kind: progress.EventEnded, Status: journal.CallStatus(end.Status)})
	return st, nil
}

// contexts makes the run's contexts: runCtx ends only with a cause this process gives it (the
// caller's context ending is a stop like any other failure, see watch, so nothing that stop
// causes reaches the journal); the stop context (r.stopCtx) ends only when the process stops,
// and is what the placer runs git under.
func (r *runner) contexts(ctx context.Context) (context.Context, context.CancelCauseFunc, context.CancelFunc) {
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	r.ctx, r.fail = runCtx, cancel
	stopCtx, stopCancel := context.WithCancel(context.WithoutCancel(ctx))
	context.AfterFunc(runCtx, func() {
		if isFailure(context.Cause(runCtx)) {
			stopCancel()
		}
	})
	r.stopCtx = stopCtx
	r.placer = placer.New(placer.Config{Run: r.id, Repo: r.spec.Repo, Mirror: r.spec.RepoURL, Dir: r.lease.Dir(), HeadCommit: r.spec.HeadCommit,
		KeepWorktrees: r.spec.KeepWorktrees, Pool: r.spec.Pool, History: r.h, Journal: r.j, Stop: stopCtx, Backend: r.backend,
		Logged: r.logged, Flush: r.flushSoon})
	r.fx = effects.New(effects.Config{Run: r.id, DryRun: r.dryRun, History: r.h, Placer: r.placer, Roles: r.roles, TierSteps: r.spec.TierSteps},
		effectsHost{r})
	return runCtx, cancel, stopCancel
}

// writeStarted writes the process's started row, durably, and from it on the backend's
// warnings that belong to no call.
func (r *runner) writeStarted(script *vm.VM, at time.Time, warnings *runwarn.Sink) error {
	started := StartedRow(r.spec, r.backend.Name(), script.Digest(), r.lease.Token())
	started.At = at
	if _, err := r.j.Write(started); err != nil {
		return err
	}
	if w, ok := r.lease.(store.ProcessLockWarner); ok && w.ProcessLockError() != nil {
		// Seed 003: warned about, and the run goes on with a started row that names no process.
		r.j.Append(journal.Warning{Reason: ReasonProcessLockUnavailable, Detail: "this process could not take a process lock of its own, and holds the run without one (its started row names no process): " +
			w.ProcessLockError().Error()}.Row())
	}
	if warnings != nil {
		warnings.Bind(r.j)
	}
	return nil
}

// watch stops the run when its cancel is requested, its lease is lost or the caller stops the
// process; the channel it returns is closed once it no longer watches (runCtx ended).
func (r *runner) watch(ctx, runCtx context.Context, cancel context.CancelCauseFunc) <-chan struct{} {
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-r.lease.Cancelled():
			cancel(errCancelRequested)
		case <-r.lease.Lost():
			r.stop(store.ErrLeaseLost)
		case <-ctx.Done():
			// The caller stopped this process (a signal, a shutdown): the run is not ended.
			r.stop(errStoppedByCaller)
		case <-runCtx.Done():
		}
	}()
	select {
	case <-r.lease.Cancelled():
		// A request stored before this process began is honoured whatever the watcher's
		// timing: a resumed script that replays to its end at once must not outrun it.
		cancel(errCancelRequested)
	default:
	}
	return watched
}

// why is how the script's run ended, from its context's cause.
type why struct{ cancelled, deadline, waitsForDecision bool }

func endOf(cause error) why {
	return why{cancelled: errors.Is(cause, errCancelRequested), deadline: errors.Is(cause, errDeadline),
		waitsForDecision: errors.Is(cause, errWaitingDecision)}
}

// stopCause is why the process stops without ending the run (a divergence, a journal that
// failed, a lost lease, a signal): a failure that ended the
// script's context, or a resumed script that ended without making a call its journal has (it
// took another path than the process that recorded it); nil when the run ends.
func (r *runner) stopCause(w why, cause error) error {
	if isFailure(cause) {
		return cause
	}
	if d := r.replay.Unmade(); d != nil && !w.cancelled && !w.deadline && !w.waitsForDecision {
		return d
	}
	return nil
}

// runEnd is the run's end as the script's returned out or threw runErr, and its ended row; an
// error when the script failed in a way that stops the process instead.
func (r *runner) runEnd(w why, out json.RawMessage, runErr error) (*store.Status, *journal.Row, error) {
	end := &store.Status{}
	ended := journal.Ended{}
	var se *vm.ScriptError
	switch {
	case w.waitsForDecision:
		end.Status = store.RunWaitingDecision
		for _, d := range r.book.Pending() {
			if strings.HasPrefix(d.ID, decisions.EffectPrefix) {
				ended.Awaited = append(ended.Awaited, d)
			}
		}
	case w.cancelled:
		end.Status = store.RunCancelled
		end.Error = ends.CancelledError(r.id)
	case w.deadline:
		end.Status = store.RunFailed
		e := errs.New(errs.BudgetExhausted, "the run passed its deadline of %s (--deadline): the calls in flight were interrupted",
			time.Duration(r.spec.Limits.DeadlineMS)*time.Millisecond).
			Because("deadline", "deadline", errs.Stopped, errs.Certain).
			Next("crw flow show " + r.id + " shows the interrupted calls; run it again with a longer --deadline")
		end.Error = journal.RunErrorOf(e, "")
	case runErr == nil:
		end.Status, end.Result = store.RunCompleted, out
	case errors.As(runErr, &se):
		end.Status, end.Error = store.RunFailed, ends.ThrownError(se)
	default:
		return nil, nil, runErr
	}
	r.mu.Lock()
	if (r.paused || r.budgetHeld || r.hostBudgetHeld) && (end.Status == store.RunCompleted || end.Status == store.RunWaitingDecision) {
		// Calls a pause held run again on a resume: the run is paused, whatever decisions
		// it waits for besides (they stay listed, and the answer resumes it).
		end.Status = store.RunPaused
		end.Paused = &journal.Paused{Limit: r.paused, HostBudget: r.hostBudgetHeld}
		if r.budgetHeld {
			end.Paused.Budget, end.Paused.Spent = r.spec.BudgetTokens, r.spent.Total
		}
		ended.Paused = end.Paused
	}
	r.mu.Unlock()
	ended.Status, ended.Result, ended.Error = string(end.Status), end.Result, end.Error
	return end, ended.Row(), nil
}

// StartedRow is the started row of a process of the run spec describes, on backend with the
// script of that digest: the row every process of a run opens with, and the one a run cancelled
// before any process ran it opens with all the same, so its journal reads as every run's does.
func StartedRow(spec *store.Spec, backend, scriptDigest, process string) *journal.Row {
	roles := inputs.RoleTable(spec.Roles)
	if roles == nil {
		roles = inputs.RoleTable{}
	}
	return journal.Started{Run: spec.Run, Backend: backend, Workflow: spec.Workflow,
		ScriptDigest: scriptDigest, RolePairs: roles, PolicyDigest: roles.Digest(), Process: process,
		Pool: spec.Pool, BudgetTokens: spec.BudgetTokens, Input: spec.Input, OmitCallSeqs: spec.OmitCallSeqs}.Row()
}

func newRunner(cfg Config) *runner {
	spec := cfg.Spec
	r := &runner{
		dryRun: cfg.DryRun,
		id:     spec.Run, spec: spec, lease: cfg.Lease, backend: cfg.Backend,
		roles: inputs.RoleTable(spec.Roles), h: cfg.History, console: cfg.Console,
		pool: pool.New(spec.Pool), rng: rand.New(rand.NewPCG(Seed(spec.Run, "crw.random"), 0)),
		clock: time.Now().UTC(), flushKick: make(chan struct{}, 1),
		calls: map[string]*call{}, ended: map[string]*endedCall{}, inflight: map[*call]struct{}{},
	}
	r.j = stopGate{Journal: cfg.Lease.Journal(), stopped: r.stopped}
	r.batch.Pool = r.pool
	if e, ok := cfg.Lease.Journal().(store.Expecter); ok {
		r.batch.Expect = e.Expect
	}
	if r.roles == nil {
		r.roles = inputs.RoleTable{}
	}
	if r.console == nil {
		r.console = io.Discard
	}
	r.scriptLog = scriptlog.New(r.console, cfg.Log, spec.Limits.Log())
	if h := r.h; h != nil {
		r.clock = h.ClockStart()
		r.spent = h.Spent
		r.nextID = h.MaxCall
	}
	r.replay = replay.New(r.h, replay.Strict, func() {
		if r.wake != nil {
			r.wake()
		}
	})
	r.book = decisions.New(decisions.Config{Run: r.id, DryRun: r.dryRun, History: r.h, Replay: r.replay,
		Journal: r.j, TakeAnswers: r.lease.TakeAnswers, Host: bookHost{r}})
	r.progress = progress.New(progress.Config{Run: r.id, Workflow: spec.Workflow, Backend: r.backend.Name(), Started: spec.CreatedAt,
		Source: progressSource{r}, Publish: r.lease.Publish, OnEvent: cfg.OnEvent})
	// The replay is over: say so at once (a detached resume waits for it).
	r.replay.OnCaughtUp(r.progress.PublishSoon)
	return r
}

// Seed derives a run's random streams from its id, so a replay draws the same numbers.
func Seed(runID, stream string) uint64 {
	h := sha256.Sum256([]byte("crw.seed.v1\x00" + stream + "\x00" + runID))
	return binary.BigEndian.Uint64(h[:8])
}

// errCancelRequested is the cause of a run's end when a cancel request was stored.
var errCancelRequested = errors.New("a cancel request was stored")

// errDeadline is the cause of a run's end when its deadline passed.
var errDeadline = errors.New("the run's deadline passed")

// ReasonDeadline is the reason the calls a deadline interrupts end held with: the closed set's
// budget_exhausted, the run's time being its budget.
const ReasonDeadline = "budget_exhausted"

// heldReason is the reason a call that never started ends held with once the run stops
// admitting calls: budget_exhausted past the deadline, else cancelled.
func (r *runner) heldReason() string {
	if errors.Is(context.Cause(r.ctx), errDeadline) {
		return ReasonDeadline
	}
	return "cancelled"
}

// errStoppedByCaller is the cause of a process that stops, leaving its run resumable, because
// the caller's context ended: a signal to the process, a shutdown.
var errStoppedByCaller = errors.New("the process was stopped")

// failure is a reason the run cannot go on, as opposed to a cancel.
type failure struct{ err error }

func (f failure) Error() string { return f.err.Error() }
func (f failure) Unwrap() error { return f.err }

func isFailure(err error) bool {
	var f failure
	return errors.As(err, &f)
}

// stop ends the run for a reason it cannot go on with.
func (r *runner) stop(err error) { r.fail(failure{err}) }

// stopped returns why the run stopped for a reason it cannot go on with; nil while it goes on
// (or ends, cancelled or not).
func (r *runner) stopped() error {
	if r.ctx == nil {
		return nil
	}
	select {
	case <-r.ctx.Done():
	default:
		return nil // the common case, without the context's lock: every row asks
	}
	if cause := context.Cause(r.ctx); isFailure(cause) {
		return cause
	}
	return nil
}

// stopError is the error a process reports when it stops without ending its run, its full
// account in the run's log.
func (r *runner) stopError(cause error) error {
	var d *replay.Divergence
	var e *errs.Error
	var t *callstate.ErrTransition
	switch {
	case errors.As(cause, &d):
		e = errs.New(errs.RevisionConflict, "run %s: %s", r.id, d.Summary()).Wrap(d).
			Because("replay", "divergence", "stopped", errs.Certain).
			Next("resume it with the script it was recorded with; crw flow shadow shows what changed")
	case errors.Is(cause, errStoppedByCaller):
		e = errs.New(errs.RunUnavailable, "run %s: this process was stopped before the run ended; the run can be resumed", r.id).Wrap(cause).
			Because("lifecycle", "process_stopped", "stopped", errs.Certain).Next("crw flow resume " + r.id)
	case errors.Is(cause, store.ErrLeaseLost):
		e = errs.New(errs.RunUnavailable, "run %s: this process lost its hold on the run and stopped writing to it", r.id).Wrap(cause).
			Because("lease", "lease_lost", "stopped", errs.Uncertain).
			Next("see whether another process holds the run (crw flow status); resume it if none does")
	case errors.Is(cause, store.ErrUnreachable):
		e = errs.New(errs.RunUnavailable, "run %s: the store did not answer; this process stopped writing to the run", r.id).Wrap(cause).
			Because("journal", "store_unreachable", "stopped", errs.Uncertain).
			Next("once the store answers again: crw flow resume " + r.id)
	case errors.As(cause, &e):
		return e
	case errors.As(cause, &t):
		e = errs.New(errs.CapabilityUnavailable, "run %s: %s", r.id, t.Error()).Wrap(cause).
			Because("call_state", "row_out_of_place", "stopped", errs.Certain).
			Next("the row was not written: crw flow resume " + r.id + " goes on from the call's last row; report the backend that recorded it")
	default:
		e = errs.New(errs.CapabilityUnavailable, "run %s: its journal could not be written", r.id).Wrap(cause).
			Because("journal", "journal_write_failed", "stopped", errs.Certain).
			Next("make room or fix the state folder, then crw flow resume " + r.id)
	}
	return e
}

// Now implements crw.Host: the time of the last step the script has seen.
func (r *runner) Now() time.Time { return r.clock }

// Random implements crw.Host.
func (r *runner) Random() float64 { return r.rng.Float64() }

// Log implements crw.Host: console and crw.log lines, muted while the script replays what the
// journal recorded, or runs on a recorded call's result after it caught up (a call the earlier
// process saw end): the earlier process printed them already.
func (r *runner) Log(level, message string) {
	if r.replay.Replaying() || r.inReplayed > 0 {
		return
	}
	// A process that stopped (its lease lost, say) writes nothing of the run's any more.
	r.scriptLog.Write(level, message, r.stopped() == nil)
}

// CheckSchema implements vm.Host.
func (r *runner) CheckSchema(s []byte) []loader.Problem { return inputs.CheckSchema(s) }

// SetWake implements vm.Waker.
func (r *runner) SetWake(wake func()) { r.wake = wake }

// Idle implements vm.Idler: the script waits and nothing can come but what the replay holds.
func (r *runner) Idle() {
	r.replay.Idle()
	r.progress.Flush()
	if r.waitsOnlyForDecisions() {
		// Nothing but an answer can come: take any that came, else let the process go.
		r.book.Take()
		if r.waitsOnlyForDecisions() {
			r.fail(errWaitingDecision)
		}
	}
}

// stopTurns stops on the host the turns an earlier process left of a call, when the backend's
// host outlives processes (backend.Stopper).
func (r *runner) stopTurns(rec *replay.Call) {
	stopper, ok := r.backend.(backend.Stopper)
	if !ok || rec.Thread == nil {
		return
	}
	var turns []string
	for _, t := range rec.Turns {
		turns = append(turns, t.TurnID)
	}
	stopper.StopTurns(context.WithoutCancel(r.ctx), backend.Call{ID: rec.ID, Index: int(rec.Index), Role: rec.Role, Node: rec.Node}, readback.Thread(rec.Thread), turns)
}

// endUnmade ends the calls of the journal that the resumed script did not make again and that
// have no terminal row in their newest generation (the rows from its newest prepared row on):
// they are superseded when the script took another path (a paused run's resume), or held
// cancelled when the run was cancelled before the script made them again, as a cancel ends
// every call it finds open. A call a pause held keeps its held row: a generation has at most one
// terminal row, and only a resume that makes the call again (a new prepared row) starts another.
func (r *runner) endUnmade(cancelled bool) {
	if r.h == nil {
		return
	}
	var rows []*journal.Row
	type ended struct {
		call backend.Call
		th   backend.Thread
	}
	var threads []ended
	for _, id := range r.h.IDs {
		rec := r.h.Call(id)
		if r.replay.Made(rec) {
			continue
		}
		if rec.EndType != "" {
			// It keeps the outcome it has (a call a pause held stays held), and the run's
			// counts say so as its journal does.
			r.progress.CallEnded(progress.Event{Kind: progress.EventCallEnded, Call: id, Role: rec.Role, Node: rec.Node,
				Status: journal.StatusOf(rec.EndType), Reason: rec.EndReason, Replayed: true})
			continue
		}
		// A turn an earlier process left running runs nothing once the call ends without it.
		r.stopTurns(rec)
		row := journal.End{Type: journal.TypeSuperseded, Reason: "superseded_by_resume", Detail: "the resumed script did not make this call again"}.Row()
		if cancelled {
			row = journal.Held("cancelled", "the run was cancelled before the resumed script made this call again")
			for _, t := range rec.Turns {
				row.TurnIDs = append(row.TurnIDs, t.TurnID)
			}
		}
		row.Call = id
		if err := rec.Machine().Apply(row); err != nil {
			r.stop(err)
			return
		}
		rows = append(rows, row)
		r.progress.CallEnded(progress.Event{Kind: progress.EventCallEnded, Call: id, Role: rec.Role, Node: rec.Node,
			Status: journal.StatusOf(row.Type), Reason: row.Reason})
		if rec.Thread != nil {
			threads = append(threads, ended{backend.Call{ID: id, Index: int(rec.Index), Role: rec.Role, Node: rec.Node}, readback.Thread(rec.Thread)})
		}
	}
	var seq uint64
	if len(rows) > 0 {
		seq = r.j.Append(rows...)
	}
	r.progress.Flush()
	if len(threads) > 0 && r.j.Sync(seq) == nil {
		// Their threads are done with once their terminal rows are durable (a session
		// subagent gets its close step).
		for _, e := range threads {
			r.backend.Done(e.call, e.th)
		}
	}
}

// flushSoon asks for the rows appended so far to be committed shortly, in case nothing else
// commits them first: a terminal row should not wait in memory for the next effect.
func (r *runner) flushSoon() {
	select {
	case r.flushKick <- struct{}{}:
	default:
	}
}

// flushDelay is how long a terminal row may wait for a commit that would cover it anyway.
const flushDelay = 20 * time.Millisecond

// flushLoop commits rows nobody else committed, a short while after they were appended.
func (r *runner) flushLoop() (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-r.flushKick:
			}
			t := time.NewTimer(flushDelay)
			select {
			case <-done:
				t.Stop()
				return
			case <-t.C:
			}
			if last := r.j.LastSeq(); r.j.DurableSeq() < last {
				if err := r.j.Sync(last); err != nil {
					r.stop(err)
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// siteOf is where a call the script was given was made: its prepared row's site, read back
// from the journal (a warning's few calls only; nothing keeps it for every call).
func (r *runner) siteOf(call string) string {
	r.mu.Lock()
	e := r.endedOf(call)
	r.mu.Unlock()
	if e != nil && e.preparedSeq > 0 && r.j.Sync(e.preparedSeq) == nil {
		if page, err := r.j.Page(e.preparedSeq, 1); err == nil && len(page) == 1 && page[0].Call == call {
			return page[0].Site
		}
	}
	if r.h != nil {
		if rec := r.h.Call(call); rec != nil {
			if p, err := r.h.PreparedRow(rec); err == nil {
				return p.Site
			}
		}
	}
	return ""
}

// Returned implements vm.Returner: the calls still under way when the workflow's entry
// function returned reach no one; they are warned of at the end (warnUnobserved).
func (r *runner) Returned() {
	r.mu.Lock()
	defer r.mu.Unlock()
	calls := make([]*call, 0, len(r.calls))
	for _, c := range r.calls {
		calls = append(calls, c)
	}
	slices.SortFunc(calls, func(a, b *call) int { return a.index - b.index })
	for _, c := range calls {
		if len(r.late) == replay.MaxUnawaited {
			break
		}
		r.late = append(r.late, agent.Unobserved{Call: c.id, Site: c.req.Site})
	}
}

// warnUnobserved journals a warning for each agent.call whose promise the workflow never
// awaited nor observed (a forgotten await: the call ran, and nobody read its result), once: a
// resume that replays the run finds the warnings it wrote before.
func (r *runner) warnUnobserved(script *vm.VM) {
	calls, more := script.Unobserved()
	for i := range calls {
		calls[i].Site = r.siteOf(calls[i].Call)
	}
	var warned map[string]bool
	if r.h != nil {
		warned = r.h.Unawaited
	}
	warnings, more := ends.Unawaited(calls, r.late, more, warned)
	for _, w := range warnings {
		r.j.Append(w.Row())
		r.progress.Event(progress.Event{Kind: progress.EventWarning, Call: w.Call, Reason: w.Reason, Detail: w.Detail})
	}
	if more > 0 {
		detail := fmt.Sprintf("and %d more agent.calls were never awaited", more)
		r.progress.Event(progress.Event{Kind: progress.EventWarning, Reason: replay.ReasonUnawaited, Detail: detail})
	}
}
