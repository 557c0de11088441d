// Package status is crw flow status: a run's state, calls, tokens, decisions and next step.
package status

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/store"
)

// Options are crw flow status's: the run, and whether it exits by the run's state.
type Options struct {
	cmdutil.RunOptions
	ExitStatus bool
}

// NewCmdStatus is crw flow status; runF, when not nil, runs in place of the command.
func NewCmdStatus(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := cmdutil.NewRunCmd(f, opts, runF, runStatus, &cobra.Command{
		Use:   "status RUN",
		Short: "Show a run's state: running, paused, waiting_decision, waiting_resume, ended, crashed or queued",
		Long: `Show where a run stands: its state (running, paused, waiting_decision, waiting_resume, ended,
crashed, or queued: no process has run it yet), its status once its process ended it, its calls and tokens, the decisions it waits
for, its result or error, and what to do next.

Exit status: 0 when the state was shown, 1 when the run is not there or its state could not be
read, 2 on bad input. With --exit-status the code is the run's instead, once its state
is shown: 0 completed, 1 failed or cancelled, 3 paused, 4 waiting for a decision, 5 still
running, 6 not over and held by no process (crashed, queued, or its decisions answered with
--no-resume: crw flow resume goes on with it); 1 and 2 keep their meaning when the state
cannot be shown.`,
	})
	cmd.Flags().BoolVar(&opts.ExitStatus, "exit-status", false, "exit with the run's own code: 0 completed, 1 failed or cancelled, 3 paused, 4 waiting for a decision, 5 running, 6 crashed or queued")
	return cmd
}

func runStatus(opts *Options) error {
	st, err := cmdutil.Show(&opts.Common, opts.Run, func(svc *engine.Service) (*store.Status, error) {
		return svc.Status(opts.Ctx, opts.Run)
	}, func(w io.Writer, st *store.Status) { printStatus(w, st) })
	if err != nil || !opts.ExitStatus {
		return err
	}
	if code := ExitCode(st); code != cmdutil.ExitOK {
		return cmdutil.ExitError{Code: code}
	}
	return nil
}

// ExitCode is the code crw flow status --exit-status exits with for a run that stands at st:
// the codes of a run's end as crw flow run gives them (0, 1, 3, 4), and two of its own for a
// run that is not over, gh run view --exit-status's way of telling it in a script.
func ExitCode(st *store.Status) int {
	switch st.State {
	case store.StateEnded:
		if st.Status == store.RunCompleted {
			return cmdutil.ExitOK
		}
		return cmdutil.ExitFailed
	case store.StatePaused:
		return cmdutil.ExitPaused
	case store.StateWaitingDecision:
		return cmdutil.ExitWaiting
	case store.StateRunning:
		return cmdutil.ExitRunning
	}
	// crashed, queued, waiting_resume, stopped: no process holds it and it has not ended.
	return cmdutil.ExitNoProcess
}
