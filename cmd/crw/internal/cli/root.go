// Package cli is crw's command line: each command parses its flags, calls the run service
// (engine.Service) and renders what it returns. It is the one place that prints errors and
// chooses exit codes, and the one place a process puts a run's recorded environment into its
// own.
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// IO is the process's streams, injected so tests can capture them.
type IO struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// ErrIsTTY tells whether live progress may redraw a line.
	ErrIsTTY bool
}

// Main runs crw with the process's arguments and streams and returns the exit code. backends
// are the backends of this build.
func Main(backends *backend.Registry) int {
	// A reader that went away (crw … | head) makes a write fail with EPIPE instead of killing
	// the process: a run goes on to its end, and the command reports what it could not write.
	signal.Ignore(syscall.SIGPIPE)
	streams := IO{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, ErrIsTTY: term.IsTerminal(int(os.Stderr.Fd()))}
	return Run(os.Args[1:], streams, backends)
}

// Exit codes: 0 success, 1 the operation failed, 2 bad input; a run that is not over when its
// process ends: 3 paused (a usage or rate limit), 4 waiting for a decision.
const (
	exitOK       = 0
	exitFailed   = 1
	exitBadInput = 2
	exitPaused   = 3
	exitWaiting  = 4
)

// exitCode is the exit code of an error a command returned: bad input for a malformed request,
// and for a run process that refuses the environment its run recorded (a detached resume,
// whose process never started, reports that as a failure of the operation instead).
func exitCode(g *globals, e *errs.Error) int {
	switch {
	case e.Code == errs.InvalidRequest:
		return exitBadInput
	case e.Code == errs.RunEnvUnusable && !g.detach:
		return exitBadInput
	}
	return exitFailed
}

// errPrinted says a command already wrote its own output for a failure; only the exit code is left.
type errPrinted struct{ code int }

func (e errPrinted) Error() string { return fmt.Sprintf("exit %d", e.code) }

// globals are the flags every command takes, and what the commands share.
type globals struct {
	state string
	json  bool
	// runOutput: the command prints a run's end ({"run", "status", "result", "error",
	// "calls"}), so its errors take that shape too.
	runOutput bool
	// detach: the command hands the run to a process of its own.
	detach bool
	// backends are the backends of this build.
	backends *backend.Registry
	store    store.Store
	// auditDetail is what an audited command that succeeded tells its audit entry.
	auditDetail string
	// runID is the run the command works on, once it is known: its errors name it (with
	// --json, their "run" member) when it exists.
	runID string
}

// errorRun is the run an error of the command belongs to: the run it works on, when that run
// exists; nil when there is none.
func (g *globals) errorRun(err error) *string {
	if g.runID == "" || !journal.ValidRunID(g.runID) || errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if g.store != nil {
		if _, serr := g.store.Spec(context.Background(), g.runID); errors.Is(serr, store.ErrNotFound) {
			return nil
		}
	}
	return &g.runID
}

// stateDir is where runs live: --state, else $CRW_STATE, else $XDG_STATE_HOME/crw, else
// ~/.local/state/crw.
func (g *globals) stateDir() (string, error) { return ops.StateDir(g.state) }

// stateExists reports whether the state folder is there: a command that failed before it
// wrote anything leaves none, and the audit does not make one.
func (g *globals) stateExists() bool {
	dir, err := g.stateDir()
	if err != nil {
		return false
	}
	_, err = os.Stat(dir)
	return err == nil
}

// service is the run service on the state folder.
func (g *globals) service() (*engine.Service, error) {
	root, err := g.stateDir()
	if err != nil {
		return nil, err
	}
	svc, st, err := ops.Open(root, g.backends)
	if err != nil {
		return nil, err
	}
	g.store = st
	return svc, nil
}

// Run runs crw with args and returns the exit code.
func Run(args []string, streams IO, backends *backend.Registry) int {
	g := &globals{backends: backends}
	out := &writeTracker{w: streams.Out}
	streams.Out = out
	root := newRoot(g, streams)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if cmd != nil && engine.Audited[cmd.Name()] && cmd.Parent() != nil && (cmd.Parent().Name() == "flow" || cmd.Parent().Name() == "codex") && g.store != nil && g.stateExists() {
		// The mutation is recorded, however it ended.
		result, detail := engine.AuditResult(err)
		var printed errPrinted
		if errors.As(err, &printed) {
			result, detail = "failed", fmt.Sprintf("exit %d", printed.code)
			if printed.code == exitPaused || printed.code == exitWaiting {
				result = "ok" // the run goes on: it is not over
			}
		}
		svc := &engine.Service{Store: g.store}
		run := g.runID
		if !journal.ValidRunID(run) {
			run = ""
		}
		if detail == "" {
			detail = g.auditDetail
		}
		svc.Audit(context.Background(), engine.AuditEntry{Op: cmd.Name(), Run: run, Who: ops.Who(), Result: result, Detail: detail})
	}
	var printed errPrinted
	if out.err != nil {
		// What the command wrote never reached its reader: unless it failed with a coded
		// error of its own, that is its failure.
		if _, coded := errs.As(err); !coded {
			unwritten := errs.New(errs.CapabilityUnavailable, "cannot write to standard output").Wrap(out.err)
			if g.runID != "" {
				unwritten = errs.New(errs.CapabilityUnavailable, "run %s: cannot write to standard output", g.runID).Wrap(out.err)
			}
			if errors.As(err, &printed) {
				fmt.Fprintf(streams.ErrOut, "crw: %s\n", unwritten.Error())
				return printed.code
			}
			err = unwritten
		}
	}
	if err == nil {
		return exitOK
	}
	if !g.json {
		// The command line did not parse as far as --json: look for it all the same.
		for _, a := range args {
			g.json = g.json || a == "--json" || a == "--json=true"
		}
		if cmd != nil && (cmd.Name() == "run" || cmd.Name() == "follow") && cmd.Parent() != nil && cmd.Parent().Name() == "flow" {
			g.runOutput = true // its errors take the shape of its output, a run's end
		}
	}
	if errors.As(err, &printed) {
		return printed.code
	}
	e, ok := errs.As(err)
	if !ok {
		// cobra's own errors are about the command line: bad input.
		e = errs.New(errs.InvalidRequest, "%s", err.Error())
	}
	if e.Diagnostic != nil && e.Diagnostic.Log == "" && g.store != nil {
		// Not logged where it arose: its full account goes to the state folder's log.
		store.LogError(g.store.Log(""), e)
	}
	if g.json && g.runOutput {
		// The commands that run a workflow answer in one shape, failed or not.
		ro := runOutput{Run: g.errorRun(err), Status: "error", Result: json.RawMessage("null"), Error: e, Calls: store.Counts{}}
		if ro.Run != nil && g.store != nil {
			// What the journal holds of the run's calls: a process that stopped on an error
			// (a full disk, say) had completed calls too.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if sum, serr := g.store.Summary(ctx, *ro.Run); serr == nil && sum.Calls != nil {
				ro.Calls = store.Counts(sum.Calls)
			}
			cancel()
		}
		writeJSON(streams.Out, ro)
	} else if g.json {
		var out struct {
			Run   *string     `json:"run,omitempty"`
			Error *errs.Error `json:"error"`
		}
		out.Run, out.Error = g.errorRun(err), e
		writeJSON(streams.Out, out)
	}
	if !g.json || out.err != nil {
		// Standard output may be gone: the error is said where it can still be read.
		fmt.Fprintf(streams.ErrOut, "crw: %s\n", e.Error())
		if d := e.Diagnostic; d != nil && d.NextAction != "" {
			fmt.Fprintf(streams.ErrOut, "crw: next: %s\n", d.NextAction)
		}
	}
	return exitCode(g, e)
}

func newRoot(g *globals, streams IO) *cobra.Command {
	root := &cobra.Command{
		Use:           "crw",
		Short:         "Run agent workflows written in JavaScript or TypeScript",
		SilenceErrors: true,
		SilenceUsage:  true,
		// A run named by "last" or a unique prefix is its id by the time a command runs.
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error { return resolveRunArgs(g, cmd, args) },
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.PersistentFlags().StringVar(&g.state, "state", "", "the state folder (default $CRW_STATE, else $XDG_STATE_HOME/crw, else ~/.local/state/crw)")
	root.PersistentFlags().BoolVar(&g.json, "json", false, "print one JSON object on stdout")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return errs.New(errs.InvalidRequest, "%v (see %s --help)", err, c.CommandPath())
	})

	flow := &cobra.Command{Use: "flow", Short: "Run, watch and inspect workflow runs", RunE: group}
	flow.AddCommand(newCmdRun(g, streams), newCmdCheck(g, streams), newCmdStart(g, streams), newCmdResume(g, streams), newCmdFollow(g, streams),
		newCmdCancel(g, streams), newCmdAnswer(g, streams), newCmdRecover(g, streams), newCmdEffects(g, streams), newCmdInspect(g, streams), newCmdAudit(g, streams), newCmdList(g, streams), newCmdStatus(g, streams), newCmdTrace(g, streams), newCmdShow(g, streams),
		newCmdShadow(g, streams), withAlias(newCmdDelete(g, streams), "rm"), newCmdPrune(g, streams), newCmdLogs(g, streams), newCmdExec(g, streams), newCmdNext(g, streams), newCmdDispatched(g, streams))
	schemaCmd := &cobra.Command{Use: "schema", Short: "Check JSON Schemas against the strict structured-output rules", RunE: group}
	schemaCmd.AddCommand(newCmdSchemaCheck(g, streams))
	root.AddCommand(flow, schemaCmd, newCmdCodex(g, streams), newCmdTypes(g, streams), newCmdVersion(g, streams), newCmdMCP(g, streams))
	version := buildVersion()
	root.Version = version.Version
	root.SetVersionTemplate(version.String())
	complete(g, root)
	withExamples(root)
	return root
}

// group runs a command that only holds subcommands: alone it prints its help, and an argument
// that names none of its subcommands is an unknown command. (cobra checks unknown commands only
// on the root.)
func group(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return c.Help()
	}
	return errs.New(errs.InvalidRequest, "unknown command %q for %q (see %s --help)", args[0], c.CommandPath(), c.CommandPath())
}

// writeTracker keeps the first error of its writer, so a command whose output could not be
// written (a full disk, a closed pipe) does not exit 0.
type writeTracker struct {
	w   io.Writer
	err error
}

func (t *writeTracker) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	if err != nil && t.err == nil {
		t.err = err
	}
	return n, err
}

// writeJSON prints v as one JSON object on a line, escaped as every command escapes: <, > and &
// as they are, also inside what the journal kept escaped.
func writeJSON(w io.Writer, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return
	}
	_, _ = w.Write(journal.UnescapeHTML(b.Bytes()))
}
