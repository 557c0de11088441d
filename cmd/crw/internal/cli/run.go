package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/foreground"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Run runs crw with args and returns the exit code.
func Run(args []string, streams IO, backends *backend.Registry) int {
	filter := &jsonFilter{w: streams.Out, seen: map[string]bool{}}
	out := &writeTracker{w: filter}
	streams.Out = out
	inv := newInvocation(&streams, backends)
	inv.filter = filter
	root := newRoot(inv)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	err = rootUnknownCommand(cmd, err)
	if ferr := filter.done(); ferr != nil && (err == nil || errors.As(err, new(cmdutil.ExitError))) {
		// What --json=FIELDS or --jq made of the output went wrong: the command's own failure,
		// if it had one, is said already.
		err = ferr
	}
	filter.raw = true // an error is printed whole
	if errors.Is(out.err, syscall.EPIPE) && errors.Is(err, syscall.EPIPE) {
		err = nil // the command stopped at the closed pipe: its reader had what it wanted
	}
	if cmd != nil && audited(cmd) && inv.store != nil && inv.stateExists() {
		inv.audit(cmd, err) // the mutation is recorded, however it ended
	}
	if out.err != nil && !errors.Is(out.err, syscall.EPIPE) {
		// What the command wrote never reached its reader (a full disk, a device gone):
		// unless it failed with a coded error of its own, that is its failure. A closed pipe
		// is none: its reader had what it wanted (crw flow trace RUN | head), and the command
		// ends as it would have.
		if _, coded := errs.As(err); !coded {
			unwritten := errs.New(errs.CapabilityUnavailable, "cannot write to standard output").Wrap(out.err)
			if run := inv.outcome.Run; run != "" {
				unwritten = errs.New(errs.CapabilityUnavailable, "run %s: cannot write to standard output", run).Wrap(out.err)
			}
			var printed cmdutil.ExitError
			if errors.As(err, &printed) {
				fmt.Fprintf(streams.ErrOut, "crw: %s\n", unwritten.Error())
				return printed.Code
			}
			err = unwritten
		}
	}
	if err == nil {
		return cmdutil.ExitOK
	}
	return inv.fail(cmd, args, err, out)
}

// rootUnknownCommand is cobra's error of an unknown command on the root (it checks those
// itself, and suggests in a shape of its own) as a group's is: one line, with its suggestions.
func rootUnknownCommand(cmd *cobra.Command, err error) error {
	if err == nil || cmd == nil || cmd.HasParent() {
		return err
	}
	rest, ok := strings.CutPrefix(err.Error(), "unknown command ")
	if !ok {
		return err
	}
	quoted, qerr := strconv.QuotedPrefix(rest)
	if qerr != nil {
		return err
	}
	name, _ := strconv.Unquote(quoted)
	return cmdutil.UnknownCommand(cmd, name)
}

// audited tells whether cmd is a mutation the audit records.
func audited(cmd *cobra.Command) bool {
	return engine.Audited[cmd.Name()] && cmd.Parent() != nil && (cmd.Parent().Name() == "flow" || cmd.Parent().Name() == "codex")
}

// audit records the command's mutation and how it ended.
func (inv *invocation) audit(cmd *cobra.Command, err error) {
	result, detail := engine.AuditResult(err)
	var printed cmdutil.ExitError
	if errors.As(err, &printed) {
		result, detail = "failed", fmt.Sprintf("exit %d", printed.Code)
		if printed.Code == cmdutil.ExitPaused || printed.Code == cmdutil.ExitWaiting {
			result = "ok" // the run goes on: it is not over
		}
	}
	svc := &engine.Service{Store: inv.store}
	run := inv.outcome.Run
	if !journal.ValidRunID(run) {
		run = ""
	}
	if detail == "" {
		detail = inv.outcome.AuditDetail
	}
	svc.Audit(context.Background(), engine.AuditEntry{Op: cmd.Name(), Run: run, Who: ops.Who(), Result: result, Detail: detail})
}

// fail prints the error a command ended with, once (unless the command said it already), and
// returns its exit code. out is standard output, which may have failed (or fail now).
func (inv *invocation) fail(cmd *cobra.Command, args []string, err error, out *writeTracker) int {
	if !inv.json {
		// The command line did not parse as far as --json: look for it all the same.
		for _, a := range args {
			inv.json = inv.json || a == "--json" || a == "--jq" || strings.HasPrefix(a, "--jq=") ||
				strings.HasPrefix(a, "--json=") && a != "--json=false"
		}
		if cmd != nil && (cmd.Name() == "run" || cmd.Name() == "follow") && cmd.Parent() != nil && cmd.Parent().Name() == "flow" {
			inv.outcome.RunOutput = true // its errors take the shape of its output, a run's end
		}
	}
	var printed cmdutil.ExitError
	if errors.As(err, &printed) {
		return printed.Code
	}
	e, ok := errs.As(err)
	if !ok {
		// cobra's own errors are about the command line: bad input.
		e = errs.New(errs.InvalidRequest, "%s", err.Error())
	}
	if e.Diagnostic != nil && e.Diagnostic.Log == "" && inv.store != nil {
		// Not logged where it arose: its full account goes to the state folder's log.
		store.LogError(inv.store.Log(""), e)
	}
	if inv.json {
		inv.writeError(out, err, e)
	}
	if !inv.json || out.err != nil {
		// Standard output may be gone: the error is said where it can still be read.
		errOut := inv.f.IOStreams.ErrOut
		fmt.Fprintf(errOut, "crw: %s\n", e.Error())
		if d := e.Diagnostic; d != nil && d.NextAction != "" {
			fmt.Fprintf(errOut, "crw: next: %s\n", d.NextAction)
		}
	}
	return inv.exitCode(e)
}

// writeError prints the error as --json does: in the shape of a run's end for the commands
// that run a workflow, else {"run", "error"}.
func (inv *invocation) writeError(w io.Writer, err error, e *errs.Error) {
	if !inv.outcome.RunOutput {
		var out struct {
			Run   *string     `json:"run,omitempty"`
			Error *errs.Error `json:"error"`
		}
		out.Run, out.Error = inv.errorRun(err), e
		cmdutil.WriteJSON(w, out)
		return
	}
	ro := foreground.RunOutput{Run: inv.errorRun(err), Status: "error", Result: json.RawMessage("null"), Error: e, Calls: store.Counts{}}
	if ro.Run != nil && inv.store != nil {
		// What the journal holds of the run's calls: a process that stopped on an error
		// (a full disk, say) had completed calls too.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if sum, serr := inv.store.Summary(ctx, *ro.Run); serr == nil && sum.Calls != nil {
			ro.Calls = store.Counts(sum.Calls)
		}
		cancel()
	}
	cmdutil.WriteJSON(w, ro)
}

// errorRun is the run an error of the command belongs to: the run it works on, when that run
// exists; nil when there is none.
func (inv *invocation) errorRun(err error) *string {
	run := inv.outcome.Run
	if run == "" || !journal.ValidRunID(run) || errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if inv.store != nil {
		if _, serr := inv.store.Spec(context.Background(), run); errors.Is(serr, store.ErrNotFound) {
			return nil
		}
	}
	return &run
}

// exitCode is the exit code of an error a command returned: bad input for a malformed request,
// and for a run process that refuses the environment its run recorded (a detached resume,
// whose process never started, reports that as a failure of the operation instead). A run
// that is not there is not found, as gh's and Temporal's commands say it: exit 1, its error
// still invalid_request.
func (inv *invocation) exitCode(e *errs.Error) int {
	switch {
	case errors.Is(e, store.ErrNoRun):
		return cmdutil.ExitFailed
	case e.Code == errs.InvalidRequest:
		return cmdutil.ExitBadInput
	case e.Code == errs.RunEnvUnusable && !inv.outcome.Detached:
		return cmdutil.ExitBadInput
	}
	return cmdutil.ExitFailed
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
