package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/session"
	"github.com/crw-dev/crw/engine/session/bound"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/runtime/modules/agent"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// sessionRun is a session run as the owner's commands read it.
type sessionRun struct {
	bus    session.Bus
	status *store.Status
	spec   *store.Spec
}

// private tells whether the run reads its host through a private app server, which cannot
// show a subagent closed.
func (r sessionRun) private() bool { return r.spec.BackendOptions["host"] == session.PrivateHost }

// sessionBus is the step bus of a session run, which must exist.
func sessionBus(ctx context.Context, g *globals, svc *engine.Service, id string) (sessionRun, error) {
	spec, err := svc.Store.Spec(ctx, id)
	if err != nil {
		return sessionRun{}, err
	}
	if spec.Backend != session.Name {
		return sessionRun{}, errs.New(errs.InvalidRequest, "run %s runs on the %s backend, not session: it has no steps for an owner", id, spec.Backend)
	}
	st, err := svc.Status(ctx, id)
	if err != nil {
		return sessionRun{}, err
	}
	return sessionRun{bus: session.Bus{Dir: g.store.(*local.Store).RunDir(id)}, status: st, spec: spec}, nil
}

func newCmdNext(g *globals, streams IO) *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "next RUN",
		Short: "Show a session run's steps for its owner: what to spawn, send or close",
		Long: `Show what a session run asks of its owner thread: its state (running, waiting_session,
paused, ended, starting), each waiting step with the host call to make (spawn_agent,
send_input or close_agent, with Codex's argument names) and the crw flow dispatched command
that reports it, the subagent slots (agents.max_threads of <CODEX_HOME>/config.toml, default
6) and a hint. It writes no row. A run no process holds that is neither paused nor over is
resumed, as crw flow resume RUN --detach does.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			g.runID = id
			if wait < 0 {
				return errs.New(errs.InvalidRequest, "--wait: must not be negative, got %s", wait)
			}
			svc, err := g.service()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			deadline := time.Now().Add(wait)
			resumed, first := 0, "" // first: the state it was asked in
			for {
				sr, err := sessionBus(ctx, g, svc, id)
				if err != nil {
					return err
				}
				st := sr.status
				if st.State == store.StateCrashed && resumed == 0 {
					// Once: a resume that cannot start says why, rather than be tried again
					// at every read.
					pid, err := svc.Start(ctx, id)
					if err != nil {
						return err
					}
					resumed = pid
					continue
				}
				view, err := nextView(sr)
				if err != nil {
					return busError(id, err)
				}
				touchSeen(sr.bus.Dir)
				view.ResumedPID = resumed
				view.Warnings = ownerWarnings(g, sr, view.State)
				if resumed != 0 {
					view.Hint = "No process held the run: it was resumed (pid " + fmt.Sprint(resumed) + "), as crw flow resume --detach does. " + view.Hint
				}
				if first == "" {
					first = view.State
				}
				if len(view.Steps) > 0 || view.State != first || view.State == session.StateEnded || view.State == session.StatePaused || view.State == session.StateWaitingDecision || !time.Now().Before(deadline) {
					printNext(g, streams, view)
					handOutCloses(sr, view)
					return nil
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
			}
		},
	}
	cmd.Flags().Var((*waitFlag)(&wait), "wait", "wait up to this long (30, in seconds, or 30s) for a step or a change of the run's state")
	return cmd
}

// handOutCloses takes back the close steps next has handed out where nothing else will: an
// ended run's (no process watches its subagents any more), and through the inbox a live run's
// whose private host cannot show a subagent closed.
func handOutCloses(sr sessionRun, v session.NextView) {
	for _, st := range v.Steps {
		switch {
		case st.Action != session.ActionClose:
		case v.State == session.StateEnded:
			sr.bus.RetractClose(st.Call, st.Attempt, st.AgentID)
		case sr.private():
			_ = sr.bus.HandedOut(v.Run, st.StepFile)
		}
	}
}

// touchSeen marks that the owner read the run (session.SeenFile), so the run does not wake an
// owner that watches it. Not a row: next writes none.
func touchSeen(dir string) {
	f, err := os.OpenFile(filepath.Join(dir, session.SeenFile), os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
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
func ownerWarnings(g *globals, sr sessionRun, state string) []string {
	if state == session.StateEnded || state == session.StatePaused || state == session.StateWaitingDecision {
		return nil
	}
	owner := sr.spec.BackendOptions["owner"]
	last, err := bound.New(g.store.(*local.Store).Root()).Last(owner)
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
	if errors.Is(err, session.ErrDamaged) {
		reason = "step_bus_damaged"
	}
	return errs.New(errs.RunUnavailable, "run %s: its step bus cannot be used: %v", run, err).
		Because("session", reason, "not_started", errs.Certain).Next("crw flow status " + run)
}

func nextView(sr sessionRun) (session.NextView, error) {
	st := sr.status
	// The bus alone: the journal is not read, so the answer costs the same at any length.
	steps, _, agents, err := sr.bus.Read()
	if err != nil {
		return session.NextView{}, err
	}
	state := session.StateRunning
	switch {
	case st.State == store.StateEnded:
		state = session.StateEnded
	case st.State == store.StatePaused:
		state = session.StatePaused
	case st.State == store.StateWaitingDecision:
		state = session.StateWaitingDecision
	case st.State == store.StateRunning && st.LastSeq == 0:
		state = session.StateStarting // its process has not published its start yet
	}
	return session.Next(st.Run, state, string(st.Status), steps, agents, session.MaxThreads(sr.spec.BackendOptions["codex-home"]),
		session.SpawnFormats(agent.Roles, sr.spec.Roles)).WithDecisions(st.Decisions), nil
}

func printNext(g *globals, streams IO, v session.NextView) {
	if g.json {
		writeJSON(streams.Out, v)
		return
	}
	fmt.Fprintf(streams.Out, "run    %s\nstate  %s\nslots  %d of %d open\n", v.Run, v.State, v.Slots.Open, v.Slots.Limit)
	spawns := false
	for _, st := range v.Steps {
		spawns = spawns || st.Action == session.ActionSpawn
	}
	if spawns {
		fmt.Fprintln(streams.Out, "spawn formats")
		for _, f := range v.SpawnFormats {
			fmt.Fprintf(streams.Out, "  %-12s %s\n", f.Role, f.Call)
		}
	}
	for _, st := range v.Steps {
		fmt.Fprintf(streams.Out, "\nstep %s: %s %s\n", stepName(st.StepFile), st.HostCall.Tool, argsJSON(st.HostCall.Arguments))
		if st.Then != "" {
			fmt.Fprintf(streams.Out, "  then: %s\n", st.Then)
		}
	}
	fmt.Fprintf(streams.Out, "\n%s\n", v.Hint)
	for _, w := range v.Warnings {
		fmt.Fprintf(streams.Out, "warning: %s\n", w)
	}
}

func newCmdDispatched(g *globals, streams IO) *cobra.Command {
	var agent string
	var k, attempt int
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "dispatched RUN CALL --agent ID --k K --attempt N",
		Short: "Report the subagent the owner started for a session run's step, and print the run's reply",
		Long: `Report the subagent (the agent_id spawn_agent returned, or the target of a send_input)
that the owner started for step CALL/t<K>-a<N> of a session run, and wait for the run's reply:
bound (exit 0), or pair_mismatch, retry, refused or close (exit 1), each with what to do. A
report that no process of the run answers in time is queued (exit 1): it stays in the run's
inbox and the run answers it when it reaches the step. A report for a run that has ended, or for a step a paused
run no longer publishes, is answered close at once.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			g.runID = id
			svc, err := g.service()
			if err != nil {
				return err
			}
			if wait < 0 {
				return errs.New(errs.InvalidRequest, "--wait: must not be negative, got %s", wait)
			}
			ctx := cmd.Context()
			sr, err := sessionBus(ctx, g, svc, id)
			if err != nil {
				return err
			}
			bus := sr.bus
			report := session.Report{Run: id, Call: args[1], Agent: agent, K: k, Attempt: attempt}
			if err := report.Check(); err != nil {
				return errs.New(errs.InvalidRequest, "crw flow dispatched: %v", err)
			}
			r, err := bus.Dispatch(report)
			if err != nil {
				return busError(id, err)
			}
			reply := session.Reply{Reply: session.ReplyQueued, Marker: r.Marker(), Agent: agent,
				Detail: "no process of the run answered in time: the report waits in the run's inbox; crw flow next shows when the run goes on"}
			deadline := time.Now().Add(wait)
			for first := true; first || time.Now().Before(deadline); first = false {
				got, ok, err := bus.ReplyTo(r.ID)
				if err != nil {
					return busError(id, err)
				}
				if ok {
					reply = got
					break
				}
				if st, err := svc.Status(ctx, id); err == nil {
					// No process will answer soon: a run that ended is done with every subagent,
					// and a paused one with every step it no longer publishes.
					detail := ""
					switch {
					case st.State == store.StateEnded:
						detail = "the run ended (" + string(st.Status) + "): its attempts ended; close the subagent"
					case st.State == store.StatePaused && !bus.Published(r.Call, r.K, r.Attempt):
						detail = "the run is paused and no step waits under this marker (its attempt ended): close the subagent"
					}
					if detail != "" {
						reply = session.Reply{Reply: session.ReplyClose, Marker: r.Marker(), Agent: agent, Detail: detail}
						bus.Drop(r) // answered here: no process will read it
						break
					}
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(50 * time.Millisecond):
				}
			}
			if g.json {
				writeJSON(streams.Out, reply)
			} else {
				fmt.Fprintf(streams.Out, "%s %s %s\n", reply.Reply, reply.Marker, reply.Agent)
				if reply.Detail != "" {
					fmt.Fprintln(streams.Out, reply.Detail)
				}
			}
			if reply.Reply != session.ReplyBound {
				return errPrinted{code: exitFailed}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "the subagent's id (spawn_agent's agent_id)")
	f.IntVar(&k, "k", 1, "the step's turn: 1 the task, 2 the repair")
	f.IntVar(&attempt, "attempt", 1, "the step's attempt")
	wait = 120 * time.Second
	f.Var((*waitFlag)(&wait), "wait", "how long to wait for the run's reply (120, in seconds, or 2m)")
	_ = cmd.MarkFlagRequired("agent")
	return cmd
}

func stepName(st session.StepFile) string {
	if st.Marker != "" {
		return st.Marker
	}
	return st.Call + " (close " + st.AgentID + ")"
}

func argsJSON(args map[string]any) string {
	b, _ := json.Marshal(args)
	return string(b)
}

// waitFlag is a --wait of the owner's commands: a duration (30s, 2m), or a number of seconds
// (30) as an owner thread may write it.
type waitFlag time.Duration

func (w *waitFlag) String() string { return time.Duration(*w).String() }
func (w *waitFlag) Type() string   { return "duration" }

func (w *waitFlag) Set(v string) error {
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(secs) || math.IsInf(secs, 0) {
			return fmt.Errorf("%q is not a number of seconds", v)
		}
		if secs > float64(maxWait/time.Second) {
			return fmt.Errorf("%q seconds is more than %s", v, maxWait)
		}
		*w = waitFlag(time.Duration(secs * float64(time.Second)))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q is neither a number of seconds nor a duration (30s, 2m)", v)
	}
	*w = waitFlag(d)
	return nil
}

// maxWait bounds a --wait given in seconds, where a float could pass any duration.
const maxWait = 24 * time.Hour
