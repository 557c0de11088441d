// Package cancel is crw flow cancel: the request that a live run stop, and its end awaited.
package cancel

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/store"
)

// Options are crw flow cancel's.
type Options struct {
	cmdutil.RunOptions
	// Wait is how long to wait for the run to end.
	Wait time.Duration
}

// NewCmdCancel is crw flow cancel; runF, when not nil, runs in place of the command.
func NewCmdCancel(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := cmdutil.NewRunCmd(f, opts, runF, runCancel, &cobra.Command{
		Use:   "cancel RUN",
		Short: "Stop a live run: its calls in flight end held (cancelled) and the run ends cancelled",
		Long: `Stop a live run. The request is stored with the run and its process, wherever it runs,
acts on it: the turns in flight are interrupted, their calls end held (cancelled), and the run
ends cancelled. A crashed or paused run ends cancelled at once.

Exit status: 0 when the run has ended cancelled, 1 when it is not there, has not ended within
--wait, had ended already (run_unavailable: nothing to cancel) or the request could not be
stored, 2 on bad input.`,
	})
	cmd.Flags().DurationVar(&opts.Wait, "wait", 30*time.Second, "how long to wait for the run to end")
	return cmd
}

func runCancel(opts *Options) error {
	st, err := cmdutil.Show(&opts.Common, opts.Run, func(svc *engine.Service) (*store.Status, error) {
		return svc.Cancel(opts.Ctx, opts.Run, opts.Wait)
	}, func(w io.Writer, st *store.Status) { printCancelled(w, opts.Run, st) })
	if err != nil {
		return err
	}
	if st.State != store.StateEnded {
		return cmdutil.Failed
	}
	return nil
}

func printCancelled(w io.Writer, run string, st *store.Status) {
	fmt.Fprintf(w, "run %s %s", run, st.State)
	if st.Status != "" {
		fmt.Fprintf(w, " (%s)", st.Status)
	}
	fmt.Fprintln(w)
}
