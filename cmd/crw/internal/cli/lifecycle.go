package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/bound"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

func newCmdStart(g *globals, streams IO) *cobra.Command {
	opts := &ops.RunOptions{}
	var backendOpts func() map[string]string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "start WORKFLOW",
		Short: "Start a workflow in its own process and return at once",
		Long: `Start a workflow in a detached process of its own and print the run's id.

The run goes on after this command returns; watch it with crw flow follow RUN or
crw flow status RUN, stop it with crw flow cancel RUN. Takes the flags of crw flow run.

A started run is a session run unless --backend says otherwise: its calls are taken by role
subagents of the Codex session it is started from (CODEX_THREAD_ID, or --owner THREAD). Outside
one, give --backend fake (offline) or --backend app-server.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g.detach = true
			opts.Workflow = args[0]
			opts.BackendOpts = backendOpts()
			opts.Stdin = streams.In
			co, err := ops.CreateOptions(opts)
			if err != nil {
				return err
			}
			svc, err := g.service()
			if err != nil {
				return err
			}
			if dryRun {
				return startPreview(g, streams, co)
			}
			started, err := ops.Start(cmd.Context(), svc, g.store.(*local.Store), co, func(s *ops.Started) {
				g.runID = s.Run
				if s.Preview != nil && !g.json {
					printPreview(streams, *s.Preview)
				}
				for _, w := range s.Warnings {
					fmt.Fprintf(streams.ErrOut, "crw: warning: %s\n", w)
				}
			})
			if started != nil {
				g.runID = started.Run
			}
			if err != nil {
				return err
			}
			printDetached(g, streams, started.Run, started.PID, started.Warnings, started.Preview)
			return nil
		},
	}
	backendOpts = addRunFlags(cmd, g, opts, session.Name)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "start nothing: check the flags and say what a session run would meet (its spawn formats and session facts)")
	return cmd
}

func newCmdResume(g *globals, streams IO) *cobra.Command {
	var detach bool
	var script, answers string
	var budget int64
	cmd := &cobra.Command{
		Use:   "resume RUN [SCRIPT]",
		Short: "Go on with a run that stopped: replay its journal and finish it",
		Long: `Resume a run whose process died or that a usage or rate limit paused.

The script runs again from the top over the run's journal: every call the journal answered
resolves from it without touching the backend, in the order it was recorded; a call that was
under way is reconciled with the backend, never sent twice; calls held by a pause run again.
A script that asks for another call than the journal recorded stops with a divergence.

With SCRIPT (or --script FILE) the run goes on with an edited workflow: it must replay the
journal as recorded (where crw flow shadow reports a divergence the resume is refused, exit 1,
nothing written), and may take new paths from where the record ends. With --answers FILE a run
on the fake backend goes on with another answers file, and with --budget-tokens N a run paused
by its token budget goes on with a larger one (its held calls run again). A change is journaled
(resume_changed) and holds for every later process of the run; run.json is not rewritten.`,
		Example: `  crw flow resume RUN
  crw flow resume RUN --answers more-answers.json
  crw flow resume RUN edited-workflow.js --detach`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := g.service()
			if err != nil {
				return err
			}
			id := args[0]
			g.runOutput, g.detach, g.runID = !detach, detach, id
			if len(args) == 2 {
				if script != "" && script != args[1] {
					return errs.New(errs.InvalidRequest, "resume: the script is named twice (%s and --script %s)", args[1], script)
				}
				script = args[1]
			}
			change := engine.ResumeChange{Script: script, Answers: answers}
			if cmd.Flags().Changed("budget-tokens") {
				change.BudgetTokens = &budget
			}
			if detach {
				pid, err := ops.ResumeDetached(cmd.Context(), svc, id, change, ops.Who())
				if err != nil {
					return err
				}
				printDetached(g, streams, id, pid, nil, nil)
				return nil
			}
			if err := svc.ChangeResume(cmd.Context(), id, change, ops.Who()); err != nil {
				return err
			}
			return foreground(cmd.Context(), g, streams, svc, id)
		},
	}
	cmd.Flags().BoolVar(&detach, "detach", false, "resume in a process of its own and return at once")
	cmd.Flags().StringVar(&script, "script", "", "go on with this edited workflow (it must replay the journal as recorded)")
	cmd.Flags().StringVar(&answers, "answers", "", "a run on the fake backend: go on with this answers file")
	cmd.Flags().Int64Var(&budget, "budget-tokens", 0, "go on with this token budget (0: none): a run paused by its budget runs its held calls again")
	return cmd
}

// printDetached prints the run a detached process runs: its id (with --json, {"run", "pid",
// "state"}, with the start's warnings and its preview).
func printDetached(g *globals, streams IO, id string, pid int, warnings []string, preview *ops.Preview) {
	if !g.json {
		fmt.Fprintln(streams.Out, id)
		return
	}
	out := map[string]any{"run": id, "pid": pid, "state": store.StateRunning}
	if len(warnings) > 0 {
		out["warnings"] = warnings
	}
	if preview != nil {
		out["preview"] = preview
	}
	writeJSON(streams.Out, out)
}

// newCmdExec is the process of a detached run.
func newCmdExec(g *globals, streams IO) *cobra.Command {
	return &cobra.Command{
		Use:    ops.ExecCommand + " RUN",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			svc, err := g.service()
			if err != nil {
				return err
			}
			onStart, onEnd := ownerHooks(ctx, g, svc, args[0], streams.ErrOut)
			end, err := execute(ctx, svc, args[0], engine.ExecOptions{Console: streams.ErrOut, OnStart: onStart})
			onEnd(end)
			if err != nil {
				return err
			}
			fmt.Fprintf(streams.ErrOut, "run %s ended %s\n", end.Run, end.Status)
			return exitFor(end)
		},
	}
}

// execute runs a run in this process, with the environment the run recorded put into the
// process's own first (refused, before anything of the run changes, when it cannot be used),
// and what was there put back when the run is done.
func execute(ctx context.Context, svc *engine.Service, id string, x engine.ExecOptions) (*store.Status, error) {
	env, err := svc.Env(ctx, id)
	if err != nil {
		return nil, err
	}
	restore := useEnv(env)
	defer restore()
	return svc.Execute(ctx, id, x)
}

// useEnv sets the variables env names in this process's environment and returns what puts
// back what was there.
func useEnv(env map[string]string) (restore func()) {
	type was struct {
		value string
		set   bool
	}
	old := map[string]was{}
	for k, v := range env {
		value, set := os.LookupEnv(k)
		old[k] = was{value, set}
		os.Setenv(k, v)
	}
	return func() {
		for k, w := range old {
			if w.set {
				os.Setenv(k, w.value)
			} else {
				os.Unsetenv(k)
			}
		}
	}
}

// foreground executes (or resumes) a run in this process with live progress and prints its end.
func foreground(ctx context.Context, g *globals, streams IO, svc *engine.Service, id string) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	prog := newProgress(streams.ErrOut, streams.ErrIsTTY, g.json && !streams.ErrIsTTY)
	bindStart, onEnd := ownerHooks(ctx, g, svc, id, streams.ErrOut)
	end, err := execute(ctx, svc, id, engine.ExecOptions{
		Console: prog.logWriter(), OnEvent: prog.event, OnStart: func(run string) {
			prog.started(run)
			if bindStart != nil {
				bindStart(run)
			}
		},
	})
	onEnd(end)
	prog.done()
	if err != nil {
		return err
	}
	printEnd(g, streams, end)
	return exitFor(end)
}

// failureLine is a run's error in one line: what the workflow threw, or crw's code, finer
// reason and account.
func failureLine(e *journal.RunError) string {
	switch {
	case e == nil:
		return ""
	case e.Code == string(errs.WorkflowFailed) || e.Code == "":
		return "the workflow threw: " + e.Text()
	case e.Reason != "":
		return e.Code + " (" + e.Reason + "): " + e.Text()
	default:
		return e.Code + ": " + e.Text()
	}
}

// printEnd prints a run's end as crw flow run does.
func printEnd(g *globals, streams IO, end *store.Status) {
	if g.json {
		out := runOutput{Run: &end.Run, Status: string(end.Status), Result: end.Result, Calls: end.Calls}
		if out.Result == nil {
			out.Result = json.RawMessage("null")
		}
		if out.Calls == nil {
			out.Calls = store.Counts{}
		}
		if end.Error != nil {
			out.Error = end.Error
		}
		writeJSON(streams.Out, out)
		return
	}
	switch end.Status {
	case store.RunFailed:
		fmt.Fprintf(streams.ErrOut, "crw: %s\n", failureLine(end.Error))
		if end.Error.Stack != "" {
			fmt.Fprintln(streams.ErrOut, indent(end.Error.Stack))
		}
		if d := end.Error.Diagnostic; d != nil && d.NextAction != "" {
			fmt.Fprintf(streams.ErrOut, "next: %s\n", d.NextAction)
		}
		fmt.Fprintf(streams.ErrOut, "run %s failed; see crw flow show %s\n", end.Run, end.Run)
	case store.RunCancelled:
		fmt.Fprintf(streams.ErrOut, "run %s was cancelled\n", end.Run)
	case store.RunPaused:
		// Not over: there is no result to print yet.
		why, how := engine.PausedBy(end)
		fmt.Fprintf(streams.ErrOut, "run %s is paused by %s; %s\n", end.Run, why, how)
	case store.RunWaitingDecision:
		fmt.Fprintf(streams.ErrOut, "run %s waits for a decision; its process has ended:\n", end.Run)
		for _, d := range end.Decisions {
			if strings.HasPrefix(d.ID, journal.VerdictPrefix) {
				fmt.Fprintf(streams.ErrOut, "  %s: %s\n", d.ID, d.Question)
				continue
			}
			fmt.Fprintf(streams.ErrOut, "  %s: %s\n    crw flow answer %s %s --value JSON\n", d.ID, d.Question, end.Run, d.ID)
		}
	default:
		fmt.Fprintln(streams.Out, string(end.Result))
	}
}

// exitFor is the exit code of a run's end: 0 completed, 1 failed or cancelled, 3 paused, 4
// waiting for a decision (neither is over: a resume or an answer goes on).
func exitFor(end *store.Status) error {
	switch end.Status {
	case store.RunFailed, store.RunCancelled:
		return errPrinted{code: exitFailed}
	case store.RunPaused:
		return errPrinted{code: exitPaused}
	case store.RunWaitingDecision:
		return errPrinted{code: exitWaiting}
	}
	return nil
}

func newCmdFollow(g *globals, streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "follow RUN",
		Short: "Show a run's live progress until it ends",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g.runOutput, g.runID = true, args[0]
			svc, err := g.service()
			if err != nil {
				return err
			}
			return follow(cmd.Context(), g, streams, svc, args[0])
		},
	}
}

func follow(ctx context.Context, g *globals, streams IO, svc *engine.Service, id string) error {
	prog := newProgress(streams.ErrOut, streams.ErrIsTTY, g.json && !streams.ErrIsTTY)
	prog.started(id)
	var last string
	// The workflow's lines, as its log keeps them, above the progress.
	runLog, logAt := svc.Store.Log(id), int64(0)
	end, err := svc.Follow(ctx, id, func(st *store.Status) {
		logAt = consoleLines(prog.logWriter(), runLog, logAt)
		ev := progressEvent(st)
		if line := summary(id, ev, nil, -1, 0); line != last && !prog.quiet {
			last = line
			if prog.tty {
				prog.event(ev)
			} else {
				fmt.Fprintf(streams.ErrOut, "%s: %d in flight, %s\n", st.State, st.InFlight, countsLine(st.Calls))
			}
		}
	})
	consoleLines(prog.logWriter(), runLog, logAt)
	prog.done()
	if err != nil {
		return err
	}
	printEnd(g, streams, end)
	return exitFor(end)
}

func newCmdCancel(g *globals, streams IO) *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "cancel RUN",
		Short: "Stop a live run: its calls in flight end held (cancelled) and the run ends cancelled",
		Long: `Stop a live run. The request is stored with the run and its process, wherever it runs,
acts on it: the turns in flight are interrupted, their calls end held (cancelled), and the run
ends cancelled. Exit status 1 when the run has not ended within --wait.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g.runID = args[0]
			svc, err := g.service()
			if err != nil {
				return err
			}
			id := args[0]
			st, err := svc.Cancel(cmd.Context(), id, wait)
			if err != nil {
				return err
			}
			if g.json {
				writeJSON(streams.Out, st)
			} else {
				fmt.Fprintf(streams.Out, "run %s %s", id, st.State)
				if st.Status != "" {
					fmt.Fprintf(streams.Out, " (%s)", st.Status)
				}
				fmt.Fprintln(streams.Out)
			}
			if st.State != store.StateEnded {
				return errPrinted{code: exitFailed}
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to wait for the run to end")
	return cmd
}

func newCmdDelete(g *globals, streams IO) *cobra.Command {
	var opts engine.DeleteOptions
	cmd := &cobra.Command{
		Use:   "delete RUN",
		Short: "Remove a run that no process holds, its journal and every file of it",
		Long: `Remove a run that no process holds: its journal and every file of it, every worktree it left in
its repository (registered, locked or half made), and its refs (refs/crw/flow/RUN/) unless
--keep-refs.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g.runID = args[0]
			svc, err := g.service()
			if err != nil {
				return err
			}
			if err := svc.Delete(cmd.Context(), args[0], opts); err != nil {
				return err
			}
			_, _ = svc.CollectFiles(cmd.Context()) // what is left is collected by the next
			if g.json {
				writeJSON(streams.Out, map[string]any{"run": args[0], "deleted": true})
			} else {
				fmt.Fprintf(streams.Out, "run %s deleted\n", args[0])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.KeepRefs, "keep-refs", false, "keep the run's refs (refs/crw/flow/RUN/) in its repository")
	return cmd
}

// startPreview is crw flow start --dry-run: the flags checked as a start checks them, and, for a
// session run, its spawn formats and session facts; nothing is created or started.
func startPreview(g *globals, streams IO, co engine.CreateOptions) error {
	backendOpts, err := g.backends.Prepare(co.Backend, co.BackendOpts)
	if err != nil {
		return err
	}
	out := map[string]any{"dry_run": true, "backend": co.Backend}
	var p ops.Preview
	if co.Backend == session.Name {
		p = ops.SessionPreview(g.store.(*local.Store), ops.PreviewOf{Owner: backendOpts["owner"], Host: backendOpts["host"],
			CodexHome: backendOpts["codex-home"], Repo: co.Repo, Roles: co.Roles})
		out["preview"] = p
	}
	if g.json {
		writeJSON(streams.Out, out)
		return nil
	}
	fmt.Fprintf(streams.Out, "a %s run would start; nothing was started\n", co.Backend)
	if co.Backend != session.Name {
		return nil
	}
	fmt.Fprintln(streams.Out, "spawn formats")
	for _, f := range p.SpawnFormats {
		fmt.Fprintf(streams.Out, "  %-12s %s\n", f.Role, f.Call)
	}
	fmt.Fprintln(streams.Out, "session facts")
	for _, f := range p.Facts {
		mark := "ok  "
		if !f.OK {
			mark = "warn"
		}
		fmt.Fprintf(streams.Out, "  %s %-22s %s\n", mark, f.Name, f.Detail)
	}
	fmt.Fprintf(streams.Out, "the steps are taken with %s\n", p.Next)
	return nil
}

// printPreview says the preview's warnings on stderr.
func printPreview(streams IO, p ops.Preview) {
	for _, f := range p.Facts {
		if !f.OK {
			fmt.Fprintf(streams.ErrOut, "crw: warning: %s: %s\n", f.Name, f.Detail)
		}
	}
}

// ownerHooks are what a process of a session run does with its owner's binding: bind it again
// once the run's started row is durable, when its line is not the one in force, and close it
// when the run ends. Warnings go to w.
func ownerHooks(ctx context.Context, g *globals, svc *engine.Service, id string, w io.Writer) (onStart func(string), onEnd func(*store.Status)) {
	st, ok := g.store.(*local.Store)
	spec, err := svc.Store.Spec(ctx, id)
	if !ok || err != nil || spec.Backend != session.Name {
		return nil, func(*store.Status) {}
	}
	onStart = func(string) {
		if warning := ops.BindOwner(st, spec); warning != "" {
			fmt.Fprintf(w, "crw: warning: %s\n", warning)
		}
	}
	onEnd = func(end *store.Status) {
		if end == nil || end.State != store.StateEnded {
			return // a paused run keeps its owner: its line is closed by the next bind once it is not live
		}
		if err := bound.New(st.Root()).Close(spec.BackendOptions["owner"], id); err != nil {
			fmt.Fprintf(w, "crw: warning: the owner's binding cannot be closed: %v\n", err)
		}
	}
	return onStart, onEnd
}
