// Package start is crw flow start: a workflow started in a detached process of its own, or
// (--dry-run) what a start would meet, starting nothing.
package start

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/createflags"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/foreground"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/errs"
)

// Options are crw flow start's.
type Options struct {
	cmdutil.Common
	// Create is what the run is created with.
	Create createflags.Flags
	DryRun bool
	// Queue: the run is created and left for a worker (crw worker) to take.
	Queue bool
}

// NewCmdStart is crw flow start; runF, when not nil, runs in place of the command.
func NewCmdStart(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "start WORKFLOW",
		Short: "Start a workflow in its own process and return at once",
		Long: `Start a workflow in a detached process of its own and print the run's id.

A started run is a session run unless --backend says otherwise: its calls are taken by role
subagents of the Codex session it is started from (CODEX_THREAD_ID, or --owner THREAD). Outside
one, give --backend fake (offline) or --backend app-server.

The run goes on after this command returns; watch it with crw flow follow RUN or
crw flow status RUN, stop it with crw flow cancel RUN. Takes the flags of crw flow run.

--queue creates the run and starts no process: a worker (crw worker, on any host of the store)
takes it, or crw flow resume RUN runs it here.

Exit status: 0 when the run was created and its process started (queued, with --queue; its
preview shown, with --dry-run), 1 when it could not be, 2 on bad input (flags, input, answers
or role file, a workflow that does not load).`,
		Args: cobra.ExactArgs(1),
	}
	take := createflags.Add(cmd, f, &opts.Create, session.Name)
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "start nothing: check the flags and say what a session run would meet (its spawn formats and session facts)")
	cmd.Flags().BoolVar(&opts.Queue, "queue", false, "create the run and start no process: a worker (crw worker) takes it")
	cmd.RunE = cmdutil.RunE(f, &opts.Common, opts, take, runF, runStart)
	return cmd
}

func runStart(opts *Options) error {
	opts.Outcome.Detached = true
	co, svc, err := createflags.Open(&opts.Common, &opts.Create)
	if err != nil {
		return err
	}
	// This host: a session run's steps and its owner's binding are in its state folder.
	st, err := opts.Host()
	if err != nil {
		return err
	}
	if opts.DryRun {
		return preview(opts, svc, st, co)
	}
	if opts.Queue {
		return queue(opts, svc, co)
	}
	started, err := ops.Start(opts.Ctx, svc, st, co, func(s *ops.Started) {
		opts.WorksOn(s.Run)
		if s.Preview != nil && !opts.JSON {
			printWarnings(opts, *s.Preview)
		}
		for _, w := range s.Warnings {
			fmt.Fprintf(opts.IO.ErrOut, "crw: warning: %s\n", w)
		}
	})
	if started != nil {
		opts.WorksOn(started.Run)
	}
	if err != nil {
		return err
	}
	foreground.PrintDetached(&opts.Common, started.Run, started.PID, started.Warnings, started.Preview)
	return nil
}

// printWarnings says the preview's warnings on stderr.
func printWarnings(opts *Options, p ops.Preview) {
	for _, f := range p.Facts {
		if !f.OK {
			fmt.Fprintf(opts.IO.ErrOut, "crw: warning: %s: %s\n", f.Name, f.Detail)
		}
	}
}

// queue creates the run and leaves it for a worker.
func queue(opts *Options, svc *engine.Service, co engine.CreateOptions) error {
	if co.Backend == session.Name {
		return errs.New(errs.InvalidRequest, "--queue: a session run is started by its owner's host, which binds it: give --backend fake or app-server")
	}
	co.KeepCode = true // the worker that takes it runs the code it was queued with
	id, err := svc.Create(opts.Ctx, co)
	if err != nil {
		return err
	}
	opts.WorksOn(id)
	opts.Print(map[string]any{"run": id, "queued": true}, func(w io.Writer) {
		fmt.Fprintln(w, id)
		fmt.Fprintf(opts.IO.ErrOut, "run %s queued: a worker (crw worker) takes it, or crw flow resume %s runs it here\n", id, id)
	})
	return nil
}
