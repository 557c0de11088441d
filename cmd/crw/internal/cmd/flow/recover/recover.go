// Package recover is crw flow recover: the verdict on a call whose outcome is unknown.
package recover

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/errs"
)

// Options are crw flow recover's.
type Options struct {
	cmdutil.Common
	Run, Call           string
	Applied, NotApplied bool
	// Output is --output as given (JSON, @FILE or @-); OutputSet whether it was given at all.
	Output    string
	OutputSet bool
	NoResume  bool
}

// NewCmdRecover is crw flow recover; runF, when not nil, runs in place of the command.
func NewCmdRecover(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "recover RUN CALL (--applied [--output JSON|@FILE] | --not-applied)",
		Short: "Give the verdict on a call whose outcome is unknown, and release its node's recovery hold",
		Long: `A call whose turn was sent and whose answer was lost ends unknown, and its node is held: every
later call of the node ends held recovery_hold, sending nothing. Verify in the host whether the
turn ran (crw flow effects says what to verify and where), then give the verdict:

  --not-applied   it did not run: the node's next call may send again
  --applied       it ran: the node's next calls run too; --output records what it answered

The unknown call's rows are not changed, and it stays unknown for the workflow. The verdict is
journaled (effect_reconciled); a run whose process is live takes it itself. A run whose workflow
waits for the verdict (crw.effect) resumes in a process of its own, unless --no-resume; resume
any other run no process holds with crw flow resume. A run that has ended takes the verdict
too, for the record, and resumes nothing: its unresolved effects stay listed until then.

Exit status: 0 when the verdict was taken, 1 when it could not be stored or the run is not
there, 2 with nothing written without a verdict or for a call that did not end unknown.`,
		Example: `  crw flow effects RUN
  crw flow recover RUN c3 --not-applied && crw flow resume RUN
  crw flow recover RUN c3 --applied --output @answer.json`,
		Args: cobra.ExactArgs(2),
		RunE: cmdutil.RunE(f, &opts.Common, opts, opts.take, runF, runRecover),
	}
	cmd.Flags().BoolVar(&opts.Applied, "applied", false, "the effect happened")
	cmd.Flags().BoolVar(&opts.NotApplied, "not-applied", false, "the effect did not happen")
	cmd.Flags().StringVar(&opts.Output, "output", "", "with --applied: what the call answered, JSON or @FILE")
	cmd.Flags().BoolVar(&opts.NoResume, "no-resume", false, "journal the verdict and start nothing")
	return cmd
}

// take takes the run, the call and whether --output was given.
func (o *Options) take(cmd *cobra.Command, args []string) {
	o.Run, o.Call, o.OutputSet = args[0], args[1], cmd.Flags().Changed("output")
}

func runRecover(opts *Options) error {
	opts.WorksOn(opts.Run)
	v := decisions.Verdict{}
	switch {
	case opts.Applied && opts.NotApplied:
		return errs.New(errs.InvalidRequest, "recover: --applied and --not-applied exclude each other")
	case opts.Applied:
		v.Verdict = decisions.VerdictApplied
	case opts.NotApplied:
		v.Verdict = decisions.VerdictNotApplied
	}
	if opts.OutputSet {
		data, err := cmdutil.ReadFlagValue("--output", opts.Output, opts.IO.In)
		if err != nil {
			return err
		}
		v.Output = data
	}
	_, err := cmdutil.Show(&opts.Common, opts.Run, func(svc *engine.Service) (*engine.Reconciled, error) {
		return svc.Recover(opts.Ctx, opts.Run, opts.Call, v, ops.Who(), !opts.NoResume)
	}, printReconciled)
	return err
}

func printReconciled(w io.Writer, out *engine.Reconciled) {
	switch {
	case out.RunEnded:
		fmt.Fprintf(w, "call %s reconciled %s: the run has ended; the verdict is recorded and resumes nothing\n", out.Call, out.Verdict)
	case out.Journaled && len(out.HeldBy) > 0:
		fmt.Fprintf(w, "call %s reconciled %s: node %s stays held by %s, whose outcome is unknown too\n", out.Call, out.Verdict, out.Node, strings.Join(out.HeldBy, ", "))
	case out.Journaled && out.Verdict == decisions.VerdictApplied:
		fmt.Fprintf(w, "call %s reconciled %s: node %s is released for the calls after it; the same call is never sent again\n", out.Call, out.Verdict, out.Node)
	case out.Journaled:
		fmt.Fprintf(w, "call %s reconciled %s: node %s is released for the calls after it, the same call included\n", out.Call, out.Verdict, out.Node)
	default:
		fmt.Fprintf(w, "call %s: the verdict %s is left for the run's live process\n", out.Call, out.Verdict)
	}
	if out.PID != 0 {
		fmt.Fprintf(w, "run %s resumed (pid %d): its workflow waited for the verdict\n", out.Run, out.PID)
	}
}
