// Package follow is crw flow follow: a run's live progress until it ends.
package follow

import (
	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/foreground"
)

// Options are crw flow follow's.
type Options struct {
	cmdutil.Common
	Run string
}

// NewCmdFollow is crw flow follow; runF, when not nil, runs in place of the command.
func NewCmdFollow(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	return &cobra.Command{
		Use:   "follow RUN",
		Short: "Show a run's live progress until it ends",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Common, opts.Run = f.Common(cmd.Context()), args[0]
			return cmdutil.Run(opts, runF, runFollow)
		},
	}
}

func runFollow(opts *Options) error {
	opts.Outcome.RunOutput = true
	svc, err := opts.RunService(opts.Run)
	if err != nil {
		return err
	}
	return foreground.Follow(&opts.Common, svc, opts.Run)
}
