// Package logs is crw flow logs: a run's log, once or followed until the run ends.
package logs

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/runlog"
	"github.com/crw-dev/crw/store"
)

// Options are crw flow logs'.
type Options struct {
	cmdutil.RunOptions
	// Follow goes on printing what is added until the run ends.
	Follow bool
}

// NewCmdLogs is crw flow logs; runF, when not nil, runs in place of the command.
func NewCmdLogs(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := cmdutil.NewRunCmd(f, opts, runF, runLogs, &cobra.Command{
		Use:   "logs RUN",
		Short: "Print a run's log: its workflow's console and crw.log lines, and the full account of its errors",
		Long: `Print the run's log (crw.log in its folder): each line its workflow wrote with console.* or
crw.log, and each error's full account with its correlationId, oldest first. -f goes on
printing what is added until the run ends. --json prints the lines as the log keeps them, one
JSON object a line (JSON Lines).

Exit status: 0 when the log was printed (with -f: once the run ended), 1 when the run is not
there or its log could not be read, 2 on bad input.`,
		Example: `  crw flow logs last
  crw flow logs RUN -f
  crw flow logs RUN --json`,
	})
	cmd.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "go on printing what is added until the run ends")
	return cmd
}

// pollEvery is how often -f looks at the log again.
const pollEvery = 300 * time.Millisecond

func runLogs(opts *Options) error {
	svc, err := opts.RunService(opts.Run)
	if err != nil {
		return err
	}
	// The run must exist; its log is read whatever its journal's state (one a machine's
	// restart left waiting for its recovery included: its log says what happened).
	if _, err := svc.Store.Spec(opts.Ctx, opts.Run); err != nil {
		return err
	}
	l := svc.Store.Log(opts.Run)
	write := func(line []byte) { runlog.WriteLine(opts.IO.Out, line, opts.JSON) }
	var off int64
	for {
		off, err = runlog.Tail(l, off, write)
		if err != nil {
			return err
		}
		if !opts.Follow {
			return nil
		}
		st, err := svc.Status(opts.Ctx, opts.Run)
		if err != nil {
			return err
		}
		if st.State != store.StateRunning {
			_, err = runlog.Tail(l, off, write)
			return err
		}
		select {
		case <-opts.Ctx.Done():
			return nil
		case <-time.After(pollEvery):
		}
	}
}
