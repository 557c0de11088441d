// Package exec is the hidden crw flow _exec RUN: the process of a detached run.
package exec

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/foreground"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
)

// Options are crw flow exec's: the run.
type Options = cmdutil.RunOptions

// NewCmdExec is crw flow _exec; runF, when not nil, runs in place of the command.
func NewCmdExec(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	return cmdutil.NewRunCmd(f, &Options{}, runF, runExec, &cobra.Command{
		Annotations: cmdutil.RunsWorkflows(),
		Use:         ops.ExecCommand + " RUN",
		Hidden:      true,
	})
}

// runExec executes the run; its errors do not name the run (its process has no reader).
func runExec(opts *Options) error {
	ctx, stop := signal.NotifyContext(opts.Ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	svc, err := opts.Service()
	if err != nil {
		return err
	}
	end, err := foreground.Execute(ctx, svc, opts.Run, engine.ExecOptions{Console: opts.IO.ErrOut, Warn: foreground.Warner(opts.IO.ErrOut)})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "run %s ended %s\n", end.Run, end.Status)
	return foreground.ExitFor(end)
}
