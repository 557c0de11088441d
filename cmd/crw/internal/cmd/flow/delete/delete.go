// Package delete is crw flow delete (rm): a run no process holds removed with all of it.
package delete

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine"
)

// Options are crw flow delete's.
type Options struct {
	cmdutil.RunOptions
	Delete engine.DeleteOptions
}

// NewCmdDelete is crw flow delete; runF, when not nil, runs in place of the command.
func NewCmdDelete(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := cmdutil.NewRunCmd(f, opts, runF, runDelete, &cobra.Command{
		Use:     "delete RUN",
		Aliases: []string{"rm"},
		Short:   "Remove a run that no process holds, its journal and every file of it",
		Long: `Remove a run that no process holds: its journal and every file of it, every worktree it left in
its repository (registered, locked or half made), and its refs (refs/crw/flow/RUN/) unless
--keep-refs.

Exit status: 0 when the run was removed, 1 when it is not there or could not be removed (a
process holds it, a file stays), 2 on bad input.`,
	})
	cmd.Flags().BoolVar(&opts.Delete.KeepRefs, "keep-refs", false, "keep the run's refs (refs/crw/flow/RUN/) in its repository")
	return cmd
}

func runDelete(opts *Options) error {
	svc, err := opts.RunService(opts.Run)
	if err != nil {
		return err
	}
	if err := svc.Delete(opts.Ctx, opts.Run, opts.Delete); err != nil {
		return err
	}
	_, _ = svc.CollectFiles(opts.Ctx) // what is left is collected by the next
	opts.Print(map[string]any{"run": opts.Run, "deleted": true}, func(w io.Writer) {
		fmt.Fprintf(w, "run %s deleted\n", opts.Run)
	})
	return nil
}
