package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crw-dev/crw/engine/runspec"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Status tells where a run stands: what its holder publishes while a process holds it, else
// what its journal, which is the record, says (a process killed after its last commit leaves a
// published status that lags behind it), from the journal's summary, not its rows.
func (s *Service) Status(ctx context.Context, run string) (*store.Status, error) {
	spec, err := s.Store.Spec(ctx, run)
	if err != nil {
		return nil, err
	}
	pub, held, err := s.Store.Published(ctx, run)
	if err != nil {
		return nil, err
	}
	out := &store.Status{Run: run, Workflow: spec.Workflow, Backend: spec.Backend, Started: spec.CreatedAt,
		Result: json.RawMessage("null"), Calls: store.Counts{}}
	if held && lettingGo(pub) {
		// The journal says how it ended, its result included (never "running", nor
		// "starting" to crw flow next).
		held = false
	}
	if held {
		out.State = store.StateRunning
		if pub != nil && pub.State != store.StateStopped && pub.State != store.StateEnded {
			out.State, out.Status, out.Error, out.InFlight, out.Tokens = pub.State, pub.Status, pub.Error, pub.InFlight, pub.Tokens
			out.Replaying, out.PID, out.LastSeq, out.Updated, out.Paused = pub.Replaying, pub.PID, pub.LastSeq, pub.Updated, pub.Paused
			if pub.Calls != nil {
				out.Calls = pub.Calls
			}
		}
		sum, err := s.Store.Summary(ctx, run)
		switch {
		case err == nil:
			out.Decisions = sum.Decisions
			out.Workflow = cmp.Or(sum.Workflow, out.Workflow)
		case holderUnreachable(err):
			var e *errs.Error
			errors.As(err, &e)
			out.Holder = strings.TrimPrefix(e.Detail, "run "+run+": ")
		}
		if pub != nil {
			// The verdicts the workflow waits for (crw.effect) have no row until the process
			// ends: only the process knows them.
			out.Decisions = withVerdicts(out.Decisions, pub.Decisions)
		}
		return out, nil
	}
	// The summary its journal's writer keeps: a run of any length answers without its rows.
	sum, err := s.Store.Summary(ctx, run)
	if err != nil {
		return nil, err
	}
	out.Calls, out.Tokens, out.Status, out.Error = store.Counts(sum.Calls), sum.Tokens, store.RunStatus(sum.Status), sum.Error
	out.Workflow = cmp.Or(sum.Workflow, out.Workflow) // a resume goes on with an edited script
	if sum.Result != nil {
		out.Result = sum.Result
	}
	switch {
	case out.Status.Final():
		out.State = store.StateEnded
	case out.Status == "" && sum.LastSeq == 0:
		out.State = store.StateQueued // no process has run it yet
	case out.Status == "":
		out.State = store.StateCrashed // no process holds it and it has not ended
		if pub != nil && pub.State == store.StateStopped {
			out.Error = pub.Error // why its last process stopped (a divergence, a failed journal)
		}
	case out.Status == store.RunPaused:
		out.State, out.Paused = store.StatePaused, sum.Paused
	default: // waiting for a decision
		out.State = store.StateWaitingDecision
		if len(sum.Decisions) == 0 {
			// Every decision it waited for has been answered since (or its verdict given),
			// and no process took it: it waits for a resume.
			out.State = store.StateWaitingResume
		}
	}
	out.Decisions = sum.Decisions
	if out.State.WaitsForAProcess() {
		out.Unserved = s.unserved(ctx, run)
	}
	return out, nil
}

// unserved are the notes of the workers that looked at a run no process holds and could not
// take it (store.KindWorkers).
func (s *Service) unserved(ctx context.Context, run string) []string {
	recs, err := s.Store.Records(run, store.KindWorkers).List(ctx, "")
	if err != nil {
		return []string{"the notes of the workers that looked at the run cannot be read: " + err.Error()}
	}
	var out []string
	for _, r := range recs {
		var n store.WorkerNote
		if err := json.Unmarshal(r.Value, &n); err != nil {
			out = append(out, fmt.Sprintf("the note of worker %s does not read: %v", r.Key, err))
			continue
		}
		out = append(out, n.String())
	}
	return out
}

// List tells where every run stands, oldest first; a run whose files cannot be read is listed
// unreadable, with its error.
func (s *Service) List(ctx context.Context) ([]store.Status, error) {
	page, err := s.ListPage(ctx, ListQuery{})
	if err != nil {
		return nil, err
	}
	return page.Runs, nil
}

// ListQuery chooses the runs ListPage gives.
type ListQuery struct {
	// States keeps the runs in these states and Statuses those of these statuses, a run kept
	// when either names it (neither given: every run).
	States   []store.State
	Statuses []store.RunStatus
	// Since keeps the runs that started at or after it (zero: whenever).
	Since time.Time
	// Before keeps the runs older than this one (a page's Next; "": the newest on).
	Before string
	// Limit is how many runs a page holds at most, the newest of those kept (0: all).
	Limit int
}

// ListPage is a page of runs: Runs oldest first, and Next, the Before of the page of older
// runs ("" when there is none).
type ListPage struct {
	Runs []store.Status
	Next string
}

// ListPage tells where the runs q keeps stand, the newest Limit of them: it reads the status of
// the runs from the newest down until the page is full, so a page of a store of 100,000 runs
// costs its own runs' reads (and the ids' listing), not every run's.
func (s *Service) ListPage(ctx context.Context, q ListQuery) (*ListPage, error) {
	ids, err := s.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	page := &ListPage{Runs: []store.Status{}}
	for i := len(ids) - 1; i >= 0; i-- {
		id := ids[i]
		if q.Before != "" && id >= q.Before {
			continue
		}
		if q.Limit > 0 && len(page.Runs) == q.Limit {
			page.Next = page.Runs[len(page.Runs)-1].Run
			break
		}
		st, err := s.Status(ctx, id)
		if err != nil {
			st = &store.Status{Run: id, State: store.StateUnreadable, Calls: store.Counts{}, Result: json.RawMessage("null"),
				Error: unreadableError(err)}
			if spec, serr := s.Store.Spec(ctx, id); serr == nil {
				st.Workflow = spec.Workflow // what the run is, from its spec, which its journal's state leaves as it is
			}
		}
		if (len(q.States) > 0 || len(q.Statuses) > 0) && !slices.Contains(q.States, st.State) && !slices.Contains(q.Statuses, st.Status) {
			continue
		}
		if !q.Since.IsZero() && (st.Started.IsZero() || st.Started.Before(q.Since)) {
			continue
		}
		page.Runs = append(page.Runs, *st)
	}
	slices.Reverse(page.Runs)
	return page, nil
}

// FollowEvery is how often Follow looks at a run on a store that cannot tell it of changes;
// FollowWatched how often it looks besides the changes a store.Watcher tells (a safety net: a
// change the watch gives is seen at once).
const (
	FollowEvery   = 150 * time.Millisecond
	FollowWatched = 10 * time.Second
)

// Follow watches a run until it ends (or pauses with no process left), giving each look to
// each; it returns the run's end. A run no process holds that has not ended is run_unavailable.
// On a store.Watcher it looks again when the store tells of a change, not on a timer.
func (s *Service) Follow(ctx context.Context, run string, each func(*store.Status)) (*store.Status, error) {
	every, changes := s.followEvery(), (<-chan struct{})(nil)
	if w, ok := s.Store.(store.Watcher); ok {
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		if ch, err := w.Changes(wctx, run); err == nil {
			every, changes = s.followWatched(), ch
		}
	}
	for {
		st, err := s.Status(ctx, run)
		if err != nil {
			return nil, err
		}
		if each != nil {
			each(st)
		}
		switch st.State {
		case store.StateEnded:
			return st, nil
		case store.StatePaused, store.StateWaitingDecision:
			if _, held, err := s.Store.Published(ctx, run); err == nil && !held {
				return st, nil
			}
		case store.StateCrashed, store.StateWaitingResume:
			return nil, errs.New(errs.RunUnavailable, "run %s has no live process and has not ended; resume it with crw flow resume %s", run, run)
		}
		// A queued run is followed until a process takes it: it was left for one.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case _, ok := <-changes:
			if !ok { // the watch failed: back to looking on the timer
				every, changes = s.followEvery(), nil
			}
		case <-time.After(every):
		}
	}
}

func (s *Service) followEvery() time.Duration {
	if s.FollowEvery > 0 {
		return s.FollowEvery
	}
	return FollowEvery
}

func (s *Service) followWatched() time.Duration {
	if s.FollowWatched > 0 {
		return s.FollowWatched
	}
	return FollowWatched
}

// Cancel ends a run cancelled. A live run's process is asked to (a stored cancel request) and
// waited for up to wait: the turns in flight are interrupted, their calls end held cancelled,
// and the run ends cancelled. A run no process holds (crashed, stopped, paused) is ended here:
// its open calls end held cancelled and the run ends cancelled. It returns where the run stands
// then; a run that has ended already is refused.
func (s *Service) Cancel(ctx context.Context, run string, wait time.Duration) (*store.Status, error) {
	st, err := s.ActingStatus(ctx, run)
	switch {
	case holderUnreachable(err):
		// A holder that is stopped or stuck holds a run that has not ended: the request is
		// stored all the same, and obeyed once it runs again.
	case err != nil:
		return nil, err
	case st.State == store.StateEnded:
		return nil, errs.New(errs.RunUnavailable, "run %s has ended (%s): there is nothing to cancel", run, st.Status)
	}
	if _, held, err := s.Store.Published(ctx, run); err != nil {
		return nil, err
	} else if !held {
		err := s.cancelUnheld(ctx, run)
		if err == nil || !errors.Is(err, store.ErrHeld) {
			if err != nil {
				return nil, err
			}
			return s.Status(ctx, run)
		}
		// A process took the run in the meantime: ask it.
	}
	if err := s.Store.RequestCancel(ctx, run); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	held := true
	for held && time.Now().Before(deadline) {
		if _, held, err = s.Store.Published(ctx, run); err != nil {
			break
		}
		if !held {
			break
		}
		if stopped, ok := s.Store.(interface{ HolderStopped(run string) bool }); ok && stopped.HolderStopped(run) {
			break // a stopped process ends nothing: waiting out --wait tells nothing more
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	st, err = s.Status(ctx, run)
	if err == nil && st.State == store.StateEnded {
		return st, nil
	}
	why := fmt.Sprintf("the process that holds it did not end it within %s", wait)
	if e := (*errs.Error)(nil); errors.As(err, &e) && e.Reason() == "holder_stopped" {
		why = strings.TrimPrefix(e.Detail, "run "+run+": ")
	} else if err == nil && st.Holder != "" {
		why = st.Holder
	}
	return st, errs.New(errs.RunUnavailable, "run %s: the cancel is stored but not confirmed: %s", run, why).
		Because("cancel", "cancel_unconfirmed", "unknown", errs.Uncertain).
		Next(fmt.Sprintf("the process obeys the stored request once it runs again (a stopped one: kill -CONT it); crw flow status %s says when the run has ended", run))
}

// holderUnreachable says whether err is a holder that holds the run and does not answer:
// stopped, or stuck.
func holderUnreachable(err error) bool {
	var e *errs.Error
	return errors.As(err, &e) && (e.Reason() == "holder_stopped" || e.Reason() == "holder_unresponsive")
}

// cancelUnheld ends a run no process holds: on its lease, its offline writer ends its open calls
// held cancelled (a turn a dead process sent is not waited for), removes its worktrees and
// writes the run's ended row.
func (s *Service) cancelUnheld(ctx context.Context, run string) error {
	spec, err := s.Store.Spec(ctx, run)
	if err != nil {
		return err
	}
	w, err := s.offline(ctx, run)
	if err != nil {
		return err
	}
	defer w.Close()
	return w.Cancel(spec, func(dir string) *journal.Row { return s.removeWorktrees(ctx, spec, run, dir) })
}

// lettingGo reports whether a holder's published status says its process wrote the run's
// ended row (ended, paused, or waiting for a decision: a run's status is published only then)
// and is letting the run go.
func lettingGo(pub *store.Status) bool {
	return pub != nil && (pub.State == store.StateEnded || pub.Status != "")
}

// Waiting for a holder that is letting its run go: how long at most, and how often to look.
const (
	letGoWithin = 10 * time.Second
	letGoEvery  = 20 * time.Millisecond
)

// heldOn reports whether a process holds run and goes on with it. One letting the run go is
// waited for, up to letGoWithin: status says such a run paused or waits for a decision, and a
// resume right after it must not be refused for the moment its process takes to end.
func (s *Service) heldOn(ctx context.Context, run string) (bool, error) {
	deadline := time.Now().Add(letGoWithin)
	for {
		pub, held, err := s.Store.Published(ctx, run)
		if err != nil || !held {
			return held, err
		}
		if !lettingGo(pub) || time.Now().After(deadline) {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case <-time.After(letGoEvery):
		}
	}
}

// CheckResumable refuses early what a resume's process would refuse, so a detached resume
// reports it: a run held by a live process, a run that has ended, a spec that is not valid or
// disagrees with the journal's started row, a recorded environment that cannot be used.
func (s *Service) CheckResumable(ctx context.Context, run string) error {
	spec, err := s.Store.Spec(ctx, run)
	if err != nil {
		return err
	}
	if err := s.OnThisHost(spec); err != nil {
		return err
	}
	if held, err := s.heldOn(ctx, run); err != nil {
		return err
	} else if held {
		return errs.New(errs.RunUnavailable, "run %s is held by a live process", run).Wrap(store.ErrHeld)
	}
	st, err := s.ActingStatus(ctx, run)
	if err != nil {
		return err
	}
	if st.State == store.StateEnded {
		return errs.New(errs.RunUnavailable, "run %s has ended (%s): there is nothing to resume", run, st.Status)
	}
	started, err := s.startedRow(ctx, run)
	if err != nil {
		return err
	}
	if err := runspec.Check(run, spec, started); err != nil {
		return err
	}
	_, err = s.Env(ctx, run)
	return err
}

// Launcher starts the process that executes a run, detached from the caller (crw flow _exec
// RUN in crw's command line), with env in place in its environment.
type Launcher interface {
	Launch(run string, env map[string]string) (Process, error)
}

// Process is a launched run process.
type Process interface {
	Pid() int
	// Exited is closed once the process has exited.
	Exited() <-chan struct{}
	// Log is where its output goes.
	Log() string
}

// StartTimeout bounds how long Start waits for a run's process to hold the run.
const StartTimeout = 30 * time.Second

// Start starts a run's process and returns once that process holds the run and has replayed
// its journal (a script that diverges from it is reported here, not later in a log), or has
// ended the run already.
func (s *Service) Start(ctx context.Context, run string) (pid int, err error) {
	if s.Launcher == nil {
		return 0, errs.New(errs.CapabilityUnavailable, "this process cannot start a run's process")
	}
	if spec, err := s.Store.Spec(ctx, run); err == nil {
		if err := s.OnThisHost(spec); err != nil {
			return 0, err
		}
	}
	env, err := s.Env(ctx, run)
	if err != nil {
		return 0, err
	}
	p, err := s.Launcher.Launch(run, env)
	if err != nil {
		return 0, errs.New(errs.CapabilityUnavailable, "run %s: cannot start its process", run).Wrap(err).
			Because("spawn", "process_not_started", "not_started", errs.Certain).
			Next("crw flow resume --detach " + run + " once crw can start processes, or crw flow delete " + run)
	}
	deadline := time.After(StartTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.Exited():
			pub, _, _ := s.Store.Published(ctx, run)
			if pub != nil && pub.PID == p.Pid() {
				switch pub.State {
				case store.StateEnded, store.StatePaused, store.StateWaitingDecision:
					return p.Pid(), nil // it ran to its end already
				case store.StateStopped:
					return 0, stoppedError(run, pub.Error, p.Log())
				default:
					// It held the run, maybe sent turns, and died without a word: a crash.
					e := errs.New(errs.RunUnavailable, "run %s: its process (pid %d) died while it ran; the run can be resumed", run, p.Pid()).
						Because("spawn", "process_died", "stopped", errs.Certain).Next("crw flow resume " + run)
					e.Diagnostic.Log = p.Log()
					return 0, e
				}
			}
			e := errs.New(errs.RunUnavailable, "run %s: its process stopped before it held the run", run).
				Because("spawn", "process_stopped", "not_started", errs.Certain).Next("read " + p.Log() + ", then crw flow resume --detach " + run)
			e.Diagnostic.Log = p.Log()
			return 0, e
		case <-deadline:
			e := errs.New(errs.RunUnavailable, "run %s: its process (pid %d) did not take the run within %v", run, p.Pid(), StartTimeout).
				Because("spawn", "process_slow", "unknown", errs.Uncertain).Next("crw flow status " + run)
			e.Diagnostic.Log = p.Log()
			return p.Pid(), e
		case <-tick.C:
			if pub, held, err := s.Store.Published(ctx, run); err == nil && held && pub != nil && pub.PID == p.Pid() && !pub.Replaying {
				return p.Pid(), nil
			}
		case <-ctx.Done():
			return p.Pid(), ctx.Err()
		}
	}
}

// unreadableError is how a run whose files cannot be read is listed.
func unreadableError(err error) *journal.RunError {
	e, ok := errs.As(err)
	if !ok {
		e = errs.New(errs.IncompatibleSchema, "%s", err.Error())
	}
	if e.Diagnostic == nil {
		e.Because("load", "unreadable", errs.NotStarted, errs.Certain)
	}
	return journal.RunErrorOf(e, "")
}

// stoppedError is the error a run's process published when it stopped without ending the run.
func stoppedError(run string, re *journal.RunError, log string) error {
	code, reason, msg := errs.RunUnavailable, "process_stopped", "its process stopped"
	if re != nil {
		msg = re.Text()
		if c := errs.Code(re.Code); c.Known() {
			code = c
		}
		if re.Reason != "" {
			reason = re.Reason
		}
	}
	e := errs.New(code, "%s", msg).Because("spawn", reason, "stopped", errs.Certain).Next("read " + log)
	e.Diagnostic.Log = log
	return e
}

// withVerdicts adds to the decisions a journal names the verdicts among published ones.
func withVerdicts(decisions, published []journal.PendingDecision) []journal.PendingDecision {
	for _, d := range published {
		if strings.HasPrefix(d.ID, journal.VerdictPrefix) && !slices.ContainsFunc(decisions, func(x journal.PendingDecision) bool { return x.ID == d.ID }) {
			decisions = append(decisions, d)
		}
	}
	return decisions
}

// removeWorktrees removes the worktrees a run no process holds has in its repository (under its
// folder dir), as its process would at the run's end, before its ended row is written: a
// process that dies in between leaves a run whose next end removes them again. Its refs stay.
// It returns a warning row when they could not all be removed.
func (s *Service) removeWorktrees(ctx context.Context, spec *store.Spec, run, dir string) *journal.Row {
	if spec.Repo == "" || spec.KeepWorktrees {
		return nil
	}
	if err := removeFromRepo(ctx, run, spec.Repo, dir, true); err != nil {
		return journal.Warning{Reason: "worktree_left", Detail: err.Error()}.Row()
	}
	return nil
}
