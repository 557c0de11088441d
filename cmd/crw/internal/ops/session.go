package ops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/bound"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/nextview"
	"github.com/crw-dev/crw/engine/backend/session/wake"
	"github.com/crw-dev/crw/engine/diagnosis"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/runtime/modules/agent"
	"github.com/crw-dev/crw/store"
)

// sessionRun is a session run as the owner's commands read it.
type sessionRun struct {
	bus    bus.Bus
	status *store.Status
	spec   *store.Spec
}

// private tells whether the run reads its host through a private app server, which cannot
// show a subagent closed.
func (r sessionRun) private() bool { return r.spec.BackendOptions["host"] == session.PrivateHost }

// sessionBus is the step bus of a session run, which must exist.
func sessionBus(ctx context.Context, svc *engine.Service, st Host, id string) (sessionRun, error) {
	spec, err := svc.Store.Spec(ctx, id)
	if err != nil {
		return sessionRun{}, err
	}
	if spec.Backend != session.Name {
		return sessionRun{}, errs.New(errs.InvalidRequest, "run %s runs on the %s backend, not session: it has no steps for an owner", id, spec.Backend)
	}
	if err := svc.OnThisHost(spec); err != nil {
		return sessionRun{}, err // its steps and replies are in that host's folder
	}
	status, err := svc.ActingStatus(ctx, id) // crw flow next resumes a run no process holds
	if err != nil {
		return sessionRun{}, err
	}
	return sessionRun{bus: bus.Bus{Dir: st.RunDir(id)}, status: status, spec: spec}, nil
}

// Next is crw flow next: what a session run asks of its owner thread, waiting up to wait for a
// step or a change of the run's state. It writes no row. A run no process holds that is
// neither paused nor over, nor waits for a decision, is resumed once, as crw flow resume
// --detach does. The close steps it hands out where nothing else will are taken back (an
// ended run's) or noted (a private host's).
func Next(ctx context.Context, svc *engine.Service, st Host, id string, wait time.Duration) (nextview.NextView, error) {
	if wait < 0 {
		return nextview.NextView{}, errs.New(errs.InvalidRequest, "--wait: must not be negative, got %s", wait)
	}
	began := time.Now()
	deadline := began.Add(wait)
	resumed, first := 0, "" // first: the state it was asked in
	var notStarted error    // the resume next tried and could not start
	for {
		sr, err := sessionBus(ctx, svc, st, id)
		if err != nil {
			return nextview.NextView{}, err
		}
		if sr.status.State.WaitsForAProcess() && resumed == 0 && notStarted == nil {
			// Once: a resume that cannot start is said in a warning, with why, rather than
			// tried again at every read; the run's state is answered as it is.
			pid, err := svc.Start(ctx, id)
			if err != nil {
				notStarted = err
				continue
			}
			resumed = pid
			continue
		}
		view, err := nextView(sr)
		if err != nil {
			return nextview.NextView{}, busError(id, err)
		}
		touchSeen(sr.bus.Dir)
		view.ResumedPID = resumed
		view.Warnings = ownerWarnings(st, sr, view.State)
		if notStarted != nil {
			view.Warnings = append(view.Warnings, resumeWarning(notStarted))
			view.Hint = "No process holds the run and its resume did not start (the warning says why): follow the warning's next action, then crw flow next " + id + " again. " + view.Hint
		}
		if resumed != 0 {
			view.Hint = "No process held the run: it was resumed (pid " + fmt.Sprint(resumed) + "), as crw flow resume --detach does. " + view.Hint
		}
		if first == "" {
			first = view.State
		}
		// A run that is starting is read again for up to startingReread whatever --wait says:
		// its holder is coming up, or a command holds the run lock for a moment (seed 003).
		rereadStart := view.State == nextview.StateStarting && time.Since(began) < startingReread
		if !rereadStart && (len(view.Steps) > 0 || view.State != first || view.State == nextview.StateEnded || view.State == nextview.StatePaused || view.State == nextview.StateWaitingDecision || !time.Now().Before(deadline)) {
			handOutCloses(sr, view)
			return view, nil
		}
		select {
		case <-ctx.Done():
			return nextview.NextView{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startingReread is how long next reads a starting run again before it answers starting
// (seed 003: 15 seconds). A variable for tests.
var startingReread = 15 * time.Second

// resumeWarning says that the resume next tried did not start, and why.
func resumeWarning(err error) string {
	if e, ok := errs.As(err); ok {
		w := "its resume did not start: " + string(e.Code)
		if r := e.Reason(); r != "" && r != string(e.Code) {
			w += " (" + r + ")"
		}
		w += ": " + e.Detail
		if e.Diagnostic != nil && e.Diagnostic.NextAction != "" {
			w += "; next: " + e.Diagnostic.NextAction
		}
		return w
	}
	return "its resume did not start: " + err.Error()
}

// handOutCloses takes back the close steps next has handed out where nothing else will: an
// ended run's (no process watches its subagents any more), and through the inbox a live run's
// whose private host cannot show a subagent closed.
func handOutCloses(sr sessionRun, v nextview.NextView) {
	for _, st := range v.Steps {
		switch {
		case st.Action != bus.ActionClose:
		case v.State == nextview.StateEnded:
			sr.bus.RetractClose(st.Call, st.Attempt, st.AgentID)
		case sr.private():
			_ = sr.bus.HandedOut(v.Run, st.StepFile)
		}
	}
}

// touchSeen marks that the owner read the run (wake.SeenFile), so the run does not wake an
// owner that watches it. Not a row: next writes none.
func touchSeen(dir string) {
	f, err := os.OpenFile(filepath.Join(dir, wake.SeenFile), os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		tv := syscall.NsecToTimeval(time.Now().UnixNano())
		_ = syscall.Futimes(int(f.Fd()), []syscall.Timeval{tv, tv})
	}
}

// ownerWarnings says when the owner's line in force is not the run's while the run goes on:
// the hook then gives the owner's spawns no pair of the run (the run's binds still check it).
func ownerWarnings(st Host, sr sessionRun, state string) []string {
	if state == nextview.StateEnded || state == nextview.StatePaused || state == nextview.StateWaitingDecision {
		return nil
	}
	owner := sr.spec.BackendOptions["owner"]
	last, err := bound.New(st.Root()).Last(owner)
	switch {
	case err != nil:
		return []string{fmt.Sprintf("the owner's binding cannot be read (%v): its spawns get no pair from the run", err)}
	case !last.Open():
		return []string{"the owner thread " + owner + " is bound to no run: its spawns get no pair from this run until the run's next process binds it"}
	case last.RunID != sr.spec.Run:
		return []string{"the owner thread " + owner + " is bound to run " + last.RunID + ", not this one: its spawns get that run's pairs"}
	}
	return nil
}

// busError is the error of a run whose step bus cannot be read or written: a folder there that
// crw did not make (ErrDamaged), or one it cannot use.
func busError(run string, err error) error {
	var e *errs.Error
	if errors.As(err, &e) {
		return err
	}
	reason := "step_bus_unusable"
	if errors.Is(err, bus.ErrDamaged) {
		reason = "step_bus_damaged"
	}
	return errs.New(errs.RunUnavailable, "run %s: its step bus cannot be used: %v", run, err).
		Because("session", reason, "not_started", errs.Certain).Next("crw flow status " + run)
}

func nextView(sr sessionRun) (nextview.NextView, error) {
	st := sr.status
	// The bus alone: the journal is not read, so the answer costs the same at any length.
	steps, _, agents, err := sr.bus.Read()
	if err != nil {
		return nextview.NextView{}, err
	}
	state := nextview.StateRunning
	switch {
	case st.State == store.StateEnded:
		state = nextview.StateEnded
	case st.State == store.StatePaused:
		state = nextview.StatePaused
	case st.State == store.StateWaitingDecision:
		state = nextview.StateWaitingDecision
	case st.State == store.StateRunning && st.LastSeq == 0:
		state = nextview.StateStarting // its process has not published its start yet
	}
	v := nextview.Next(st.Run, state, string(st.Status), steps, agents, nextview.MaxThreads(sr.spec.BackendOptions["codex-home"]),
		nextview.SpawnFormats(agent.Roles, sr.spec.Roles)).WithDecisions(st.Decisions)
	if state == nextview.StatePaused {
		v = v.WithPause(diagnosis.PausedBy(st))
	}
	return v, nil
}

// Dispatched is crw flow dispatched: it reports the subagent the owner started for a step of a
// session run and waits up to wait for the run's reply (bound, pair_mismatch, retry, refused,
// close). A report of a run no process holds is queued at once, and one no process of the
// run answers in time is queued then: it stays in the run's inbox. A report for a run that has ended, or for a step a paused run no longer publishes, is
// answered close at once.
func Dispatched(ctx context.Context, svc *engine.Service, st Host, report bus.Report, wait time.Duration) (bus.Reply, error) {
	id := report.Run
	if wait < 0 {
		return bus.Reply{}, errs.New(errs.InvalidRequest, "--wait: must not be negative, got %s", wait)
	}
	sr, err := sessionBus(ctx, svc, st, id)
	if err != nil {
		return bus.Reply{}, err
	}
	if err := report.Check(); err != nil {
		return bus.Reply{}, errs.New(errs.InvalidRequest, "crw flow dispatched: %v", err)
	}
	r, err := sr.bus.Dispatch(report)
	if err != nil {
		return bus.Reply{}, busError(id, err)
	}
	agent := report.Agent
	reply := bus.Reply{Reply: bus.ReplyQueued, Marker: r.Marker(), Agent: agent,
		Detail: "no process of the run answered in time: the report waits in the run's inbox; crw flow next shows when the run goes on"}
	deadline := time.Now().Add(wait)
	for first := true; first || time.Now().Before(deadline); first = false {
		got, ok, err := sr.bus.ReplyTo(r.ID)
		if err != nil {
			return bus.Reply{}, busError(id, err)
		}
		if ok {
			return got, nil
		}
		// Whether a process holds the run is read before its status: a holder that ends the
		// run publishes its end before it lets go, so a run no process held at the first read
		// has its last word in the second.
		held := st.Held(id)
		if status, err := svc.Status(ctx, id); err == nil {
			// No process will answer soon: a run that ended is done with every subagent, and
			// a paused one with every step it no longer publishes.
			detail := ""
			switch {
			case status.State == store.StateEnded && sr.bus.PacketWritten(r.Call, r.K, r.Attempt):
				detail = "the run ended (" + string(status.Status) + "): the attempt of this marker ended; close the subagent"
			case status.State == store.StateEnded:
				detail = "the run ended (" + string(status.Status) + ") and never published a step under this marker; close the subagent"
			case status.State == store.StatePaused && !sr.bus.Published(r.Call, r.K, r.Attempt):
				detail = "the run is paused: " + sr.bus.CloseDetail(r)
			}
			if detail != "" {
				sr.bus.Drop(r) // answered here: no process will read it
				return bus.Reply{Reply: bus.ReplyClose, Marker: r.Marker(), Agent: agent, Detail: detail}, nil
			}
		}
		if !held {
			// No process holds the run to answer it (seed 003): queued at once. The process
			// the owner's next crw flow next resumes reads it from the inbox.
			reply.Detail = "no process holds the run: the report waits in the run's inbox; crw flow next " + id + " resumes the run, which answers it"
			return reply, nil
		}
		select {
		case <-ctx.Done():
			return bus.Reply{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return reply, nil
}
