package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/errs"
)

// execCommand is the hidden command a detached run's process runs.
const execCommand = "_exec"

func newCmdStart(g *globals, streams IO) *cobra.Command {
	opts := &RunOptions{}
	var backendOpts func() map[string]string
	cmd := &cobra.Command{
		Use:   "start WORKFLOW",
		Short: "Start a workflow in its own process and return at once",
		Long: `Start a workflow in a detached process of its own and print the run's id.

The run goes on after this command returns; watch it with crw flow follow RUN or
crw flow status RUN, stop it with crw flow cancel RUN. Takes the flags of crw flow run.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Workflow = args[0]
			opts.BackendOpts = backendOpts()
			eopts, err := engineOptions(g, opts)
			if err != nil {
				return err
			}
			id, err := engine.Create(eopts)
			if err != nil {
				return err
			}
			state, err := stateDir(g)
			if err != nil {
				return err
			}
			return detached(g, streams, state, id)
		},
	}
	backendOpts = addRunFlags(cmd, g, opts)
	return cmd
}

func newCmdResume(g *globals, streams IO) *cobra.Command {
	var detach bool
	cmd := &cobra.Command{
		Use:   "resume RUN",
		Short: "Go on with a run that stopped: replay its journal and finish it",
		Long: `Resume a run whose process died or that a usage or rate limit paused.

The script runs again from the top over the run's journal: every call the journal answered
resolves from it without touching the backend, in the order it was recorded; a call that was
under way is reconciled with the backend, never sent twice; calls held by a pause run again.
A script that asks for another call than the journal recorded stops with a divergence.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			state, err := stateDir(g)
			if err != nil {
				return err
			}
			id := args[0]
			g.runOutput, g.detach = !detach, detach
			if detach {
				if err := resumable(state, id); err != nil {
					return err
				}
				return detached(g, streams, state, id)
			}
			return foreground(cmd.Context(), g, streams, state, id)
		},
	}
	cmd.Flags().BoolVar(&detach, "detach", false, "resume in a process of its own and return at once")
	return cmd
}

// detached starts a run's process and prints the run's id (with --json, {"run", "pid", "state"}).
func detached(g *globals, streams IO, state, id string) error {
	pid, err := spawn(state, id)
	if err != nil {
		return err
	}
	if g.json {
		writeJSON(streams.Out, map[string]any{"run": id, "pid": pid, "state": "running"})
	} else {
		fmt.Fprintln(streams.Out, id)
	}
	return nil
}

// newCmdExec is the process of a detached run.
func newCmdExec(g *globals, streams IO) *cobra.Command {
	return &cobra.Command{
		Use:    execCommand + " RUN",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := engine.Execute(ctx, g.state, args[0], engine.ExecOptions{Log: streams.ErrOut, Backends: g.backends})
			if err != nil {
				return err
			}
			fmt.Fprintf(streams.ErrOut, "run %s ended %s\n", res.Run, res.Status)
			return exitFor(res)
		},
	}
}

// foreground executes (or resumes) a run in this process with live progress and prints its end.
func foreground(ctx context.Context, g *globals, streams IO, state, id string) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	prog := newProgress(streams.ErrOut, streams.ErrIsTTY, g.json && !streams.ErrIsTTY)
	res, err := engine.Execute(ctx, state, id, engine.ExecOptions{
		Log: prog.logWriter(), OnEvent: prog.event, OnStart: prog.started, Backends: g.backends,
	})
	prog.done()
	if err != nil {
		return err
	}
	printResult(g, streams, res)
	return exitFor(res)
}

// printResult prints a finished run as crw flow run does.
func printResult(g *globals, streams IO, res *engine.Result) {
	if g.json {
		out := runOutput{Run: &res.Run, Status: res.Status, Result: res.Result, Calls: res.Calls}
		if out.Result == nil {
			out.Result = json.RawMessage("null")
		}
		if out.Calls == nil {
			out.Calls = engine.Counts{}
		}
		if res.Error != nil {
			out.Error = res.Error
		}
		writeJSON(streams.Out, out)
		return
	}
	switch res.Status {
	case engine.RunFailed:
		fmt.Fprintf(streams.ErrOut, "crw: the workflow threw: %s\n", res.Error.Message)
		if res.Error.Stack != "" {
			fmt.Fprintln(streams.ErrOut, indent(res.Error.Stack))
		}
		fmt.Fprintf(streams.ErrOut, "run %s failed; see crw flow show %s\n", res.Run, res.Run)
	case engine.RunCancelled:
		fmt.Fprintf(streams.ErrOut, "run %s was cancelled\n", res.Run)
	default:
		fmt.Fprintln(streams.Out, string(res.Result))
		if res.Status == engine.RunPaused {
			fmt.Fprintf(streams.ErrOut, "run %s is paused by a usage or rate limit; resume it with crw flow resume %s\n", res.Run, res.Run)
		}
	}
}

func exitFor(res *engine.Result) error {
	if res.Status == engine.RunFailed || res.Status == engine.RunCancelled {
		return errPrinted{code: exitFailed}
	}
	return nil
}

// resumable refuses early what Execute would refuse, so a detached resume reports it.
func resumable(state, id string) error {
	if !engine.ValidRunID(id) {
		return errs.New(errs.InvalidRequest, "%q is not a run id (like 20261130-052301-a1b2c3)", id)
	}
	spec, err := engine.ReadSpec(state, id)
	if err != nil {
		return err
	}
	if engine.Live(state, id) {
		return errs.New(errs.RunUnavailable, "run %s is held by a live process", id)
	}
	if st, err := engine.Status(state, id); err != nil {
		return err
	} else if st.State == "ended" {
		return errs.New(errs.RunUnavailable, "run %s has ended (%s): there is nothing to resume", id, st.Status)
	}
	if tmp, ok := spec.Env["TMPDIR"]; ok {
		if st, err := os.Stat(tmp); err != nil || !st.IsDir() {
			return errs.New(errs.RunEnvUnusable, "run %s recorded TMPDIR %s, which is missing or not a directory; make it again to resume the run", id, tmp)
		}
	}
	return nil
}

// spawn starts the process of a detached run and returns once it holds the run and has
// replayed its journal, or fails with what it said. The process gets the caller's environment with the run's recorded TMPDIR.
func spawn(state, id string) (int, error) {
	self, err := selfPath()
	if err != nil {
		return 0, errs.New(errs.CapabilityUnavailable, "cannot find crw's own binary: %v", err)
	}
	spec, err := engine.ReadSpec(state, id)
	if err != nil {
		return 0, err
	}
	dir := engine.RunDir(state, id)
	logPath := filepath.Join(dir, "process.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, errs.New(errs.CapabilityUnavailable, "cannot open %s: %v", logPath, err)
	}
	defer logFile.Close()
	before, _ := os.Stat(logPath)

	cmd := exec.Command(self, "flow", execCommand, id, "--state", state)
	cmd.Args[0] = self
	cmd.Env = withEnv(os.Environ(), spec.Env)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, errs.New(errs.CapabilityUnavailable, "cannot start the run's process: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-exited:
			if st, err := engine.ReadState(state, id); err == nil && st.PID == cmd.Process.Pid && (st.State == "ended" || st.State == "paused") {
				return cmd.Process.Pid, nil // it ran to its end already
			}
			return 0, errs.New(errs.RunUnavailable, "the run's process stopped: %s", logTail(logPath, before))
		case <-deadline:
			return cmd.Process.Pid, errs.New(errs.RunUnavailable, "the run's process (pid %d) did not take run %s within 30 s; see %s", cmd.Process.Pid, id, logPath)
		case <-tick.C:
			// Held, and past the replay of its journal: a script that diverges from the journal
			// is reported here rather than found later in the log.
			if st, err := engine.ReadState(state, id); err == nil && st.PID == cmd.Process.Pid && !st.Replaying {
				return cmd.Process.Pid, nil
			}
		}
	}
}

// selfPath is how to start crw again: the path it was started by, which keeps the name it was
// called under.
func selfPath() (string, error) {
	self := os.Args[0]
	if !strings.Contains(self, string(filepath.Separator)) {
		return exec.LookPath(self)
	}
	return filepath.Abs(self)
}

// withEnv replaces or adds the given variables, one entry each.
func withEnv(env []string, set map[string]string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := set[name]; ok {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	return out
}

// logTail is what a process wrote to its log since before it started: its last lines.
func logTail(path string, before os.FileInfo) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	if before != nil && int64(len(data)) >= before.Size() {
		data = data[before.Size():]
	}
	s := strings.TrimSpace(string(data))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	if s == "" {
		return "(it printed nothing)"
	}
	return s
}

func newCmdFollow(g *globals, streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "follow RUN",
		Short: "Show a run's live progress until it ends",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g.runOutput = true
			state, err := stateDir(g)
			if err != nil {
				return err
			}
			return follow(cmd.Context(), g, streams, state, args[0])
		},
	}
}

func follow(ctx context.Context, g *globals, streams IO, state, id string) error {
	prog := newProgress(streams.ErrOut, streams.ErrIsTTY, g.json && !streams.ErrIsTTY)
	prog.started(id)
	var last string
	for {
		st, err := runStatus(state, id)
		if err != nil {
			return err
		}
		ev := engine.Event{Kind: "progress", Run: id, Calls: st.Calls, InFlight: st.InFlight, Tokens: st.Tokens}
		if line := summary(id, ev, 0); line != last && !prog.quiet {
			last = line
			if prog.tty {
				prog.event(ev)
			} else {
				fmt.Fprintf(streams.ErrOut, "%s: %d in flight, %s\n", st.State, st.InFlight, countsLine(st.Calls))
			}
		}
		switch st.State {
		case "ended":
			prog.done()
			res := &engine.Result{Run: id, Status: st.Status, Result: st.Result, Error: st.Error, Calls: st.Calls}
			printResult(g, streams, res)
			return exitFor(res)
		case "paused":
			if !engine.Live(state, id) {
				prog.done()
				res := &engine.Result{Run: id, Status: st.Status, Result: st.Result, Error: st.Error, Calls: st.Calls}
				printResult(g, streams, res)
				return exitFor(res)
			}
		case "crashed":
			prog.done()
			return errs.New(errs.RunUnavailable, "run %s has no live process and has not ended; resume it with crw flow resume %s", id, id)
		}
		select {
		case <-ctx.Done():
			prog.done()
			return ctx.Err()
		case <-time.After(150 * time.Millisecond):
		}
	}
}

func newCmdCancel(g *globals, streams IO) *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "cancel RUN",
		Short: "Stop a live run: its calls in flight end held (cancelled) and the run ends cancelled",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			state, err := stateDir(g)
			if err != nil {
				return err
			}
			id := args[0]
			st, err := runStatus(state, id)
			if err != nil {
				return err
			}
			if st.State != "running" && st.State != "paused" {
				return errs.New(errs.RunUnavailable, "run %s is %s: only a live run can be cancelled", id, st.State)
			}
			rs, err := engine.ReadState(state, id)
			if err != nil {
				return err
			}
			if err := syscall.Kill(rs.PID, syscall.SIGTERM); err != nil {
				return errs.New(errs.RunUnavailable, "run %s: cannot signal its process %d: %v", id, rs.PID, err)
			}
			deadline := time.Now().Add(wait)
			for engine.Live(state, id) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			st, err = runStatus(state, id)
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
			if st.State != "ended" {
				return errPrinted{code: exitFailed}
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to wait for the run to end")
	return cmd
}
