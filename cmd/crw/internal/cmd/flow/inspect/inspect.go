// Package inspect is crw flow inspect: a run's diagnosis, with what its host adds.
package inspect

import (
	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/diagnosis"
)

// Options are crw flow inspect's: the run.
type Options = cmdutil.RunOptions

// NewCmdInspect is crw flow inspect; runF, when not nil, runs in place of the command.
func NewCmdInspect(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	return cmdutil.NewRunCmd(f, &Options{}, runF, runInspect, &cobra.Command{
		Use:   "inspect RUN",
		Short: "A run's diagnosis: where it stands, what holds it, what it waits for, and what to do next",
		Long: `A run's diagnosis: its state, its open calls, the nodes held and by what, the decisions it waits
for, its last error, the tail of its log, and what to do next, most pressing first.

Exit status: 0 when it was shown (whatever the run's state), 1 when the run is not there or
could not be read, 2 on bad input.`,
	})
}

func runInspect(opts *Options) error {
	_, err := cmdutil.Show(&opts.Common, opts.Run, func(svc *engine.Service) (*diagnosis.Inspection, error) {
		in, err := svc.Inspect(opts.Ctx, opts.Run)
		if err != nil {
			return nil, err
		}
		if st, err := opts.Host(); err == nil {
			ops.HostState(st, in) // what the run's host adds, when its folder is on this host
		}
		return in, nil
	}, printInspection)
	return err
}
