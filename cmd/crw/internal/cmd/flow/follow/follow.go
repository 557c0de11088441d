// Package follow is crw flow follow: a run's live progress until it ends.
package follow

import (
	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/foreground"
)

// Options are crw flow follow's: the run.
type Options = cmdutil.RunOptions

// NewCmdFollow is crw flow follow; runF, when not nil, runs in place of the command.
func NewCmdFollow(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	return cmdutil.NewRunCmd(f, &Options{}, runF, runFollow, &cobra.Command{
		Use:   "follow RUN",
		Short: "Show a run's live progress until it ends",
	})
}

func runFollow(opts *Options) error {
	opts.Outcome.RunOutput = true
	svc, err := opts.RunService(opts.Run)
	if err != nil {
		return err
	}
	return foreground.Follow(&opts.Common, svc, opts.Run)
}
