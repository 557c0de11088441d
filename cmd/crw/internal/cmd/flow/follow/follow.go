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
		Long: `Show the live progress of a run another process holds (its calls, and the lines its workflow
writes) until it ends, then print its end as crw flow run does. A run no process holds (one
that ended before the follow began) is shown as its last process left it: that process's calls
(their last 1,000 starts and ends) and its workflow's lines.

Exit status: as crw flow run's: 0 when the workflow returned, 1 when it threw, met a limit or
was cancelled, when the run has no live process and has not ended (resume it), or when it is
not there, 2 on bad input, 3 when it paused (a usage or rate limit, or its token budget), 4 when
it waits for a decision.`,
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
