// Package effects is crw flow effects: the effects whose outcome is unknown, and how to
// reconcile each.
package effects

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine/diagnosis"
)

// Options are crw flow effects'.
type Options struct {
	cmdutil.Common
	// Runs are the run named, if one is: none lists every run's effects.
	Runs  []string
	Limit int
}

// NewCmdEffects is crw flow effects; runF, when not nil, runs in place of the command.
func NewCmdEffects(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := cmdutil.NewCmd(f, opts, runF, runEffects, &cobra.Command{
		Use:   "effects [RUN]",
		Short: "List the effects whose outcome is unknown: what to verify, where, and how to reconcile each",
		Long: `List the effects whose outcome is unknown, of every run or of RUN: the call, what to verify and
where, and the crw flow recover command that reconciles each.

Exit status: 0 when they were listed (none included), 1 when the run is not there or the runs
could not be read, 2 on bad input.`,
		Args: cobra.MaximumNArgs(1),
	})
	cmd.Flags().IntVar(&opts.Limit, "limit", 100, "list at most N effects")
	return cmd
}

// Take takes the run named, if one is.
func (o *Options) Take(_ *cobra.Command, args []string) {
	o.Runs = args
}

func runEffects(opts *Options) error {
	svc, err := opts.Service()
	if err != nil {
		return err
	}
	for _, run := range opts.Runs {
		opts.WorksOn(run)
	}
	effects, err := svc.Effects(opts.Ctx, opts.Limit, opts.Runs...)
	if err != nil {
		return err
	}
	opts.Print(map[string]any{"effects": effects}, func(w io.Writer) {
		printEffects(w, effects)
	})
	return nil
}

func printEffects(w io.Writer, effects []diagnosis.Effect) {
	if len(effects) == 0 {
		fmt.Fprintln(w, "no unresolved effect")
		return
	}
	for _, e := range effects {
		ended := ""
		if e.RunEnded {
			ended = "  (run ended)"
		}
		fmt.Fprintf(w, "run %s  %s %s  node %s  %s%s\n  verify %s\n  then   %s\n", e.Run, e.Kind, cmdutil.Dash(e.Call), e.Node, cmdutil.Dash(e.Reason), ended, e.Verify, e.Then)
	}
}
