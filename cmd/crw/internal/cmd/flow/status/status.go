// Package status is crw flow status: a run's state, calls, tokens, decisions and next step.
package status

import (
	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine"
)

// Options are crw flow status's: the run.
type Options = cmdutil.RunOptions

// NewCmdStatus is crw flow status; runF, when not nil, runs in place of the command.
func NewCmdStatus(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	return cmdutil.NewRunCmd(f, &Options{}, runF, runStatus, &cobra.Command{
		Use:   "status RUN",
		Short: "Show a run's state: running, paused, waiting_decision, waiting_resume, ended or crashed",
	})
}

func runStatus(opts *Options) error {
	return cmdutil.ShowRun(opts, (*engine.Service).Status, printStatus)
}
