// Package audit is crw flow audit: the history of the mutations commands made.
package audit

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine"
)

// Options are crw flow audit's.
type Options struct {
	cmdutil.Common
	// Run keeps the entries of one run; "" keeps all.
	Run   string
	Limit int
}

// NewCmdAudit is crw flow audit; runF, when not nil, runs in place of the command.
func NewCmdAudit(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := cmdutil.NewCmd(f, opts, runF, runAudit, &cobra.Command{
		Use:   "audit [RUN]",
		Short: "The history of the mutations commands made (run, start, resume, cancel, answer, recover, delete, dispatched): who, when, and how each ended",
		Long: `The history of the mutations commands made (run, start, resume, cancel, answer, recover, delete,
dispatched): when, which, on what run, by whom, and how each ended. With RUN, those
of that run only: a run deleted since keeps its history, so RUN need not be there.

Exit status: 0 when it was listed (nothing included), 1 when the run is not there or its
audit could not be read, 2 on bad input.`,
		Args: cobra.MaximumNArgs(1),
	})
	cmd.Flags().IntVar(&opts.Limit, "limit", 50, "the newest N entries")
	return cmd
}

// Take takes the run named, if one is.
func (o *Options) Take(_ *cobra.Command, args []string) {
	if len(args) == 1 {
		o.Run = args[0]
	}
}

// runAudit lists the entries; of a run named, its errors name the run and --json carries it, as
// those of the commands that work on a run do.
func runAudit(opts *Options) error {
	out := map[string]any{}
	if opts.Run != "" {
		opts.WorksOn(opts.Run)
		out["run"] = opts.Run
	}
	svc, err := opts.Service()
	if err != nil {
		return err
	}
	entries, err := svc.AuditLog(opts.Ctx, opts.Run, opts.Limit)
	if err != nil {
		return err
	}
	out["audit"] = entries
	opts.Print(out, func(w io.Writer) {
		printEntries(w, entries)
	})
	return nil
}

func printEntries(w io.Writer, entries []engine.AuditEntry) {
	for _, e := range entries {
		fmt.Fprintf(w, "%s  %-10s %-22s %-12s %s", e.At.Format(time.RFC3339), e.Op, cmdutil.Dash(e.Run), e.Who, e.Result)
		if e.Detail != "" && e.Result != "ok" {
			fmt.Fprintf(w, ": %s", e.Detail)
		}
		fmt.Fprintln(w)
	}
}
