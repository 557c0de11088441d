// Package worker is crw worker: a process that takes the runs no process holds and executes
// each in a child process of its own (package cmd/crw/internal/worker).
package worker

import (
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/worker"
	"github.com/crw-dev/crw/errs"
)

// DefaultSlots is how many runs a worker executes at once unless --slots says.
const DefaultSlots = 4

// Options are crw worker's.
type Options struct {
	cmdutil.Common
	Slots  int
	Offers []string
}

// NewCmdWorker is crw worker; runF, when not nil, runs in place of the command.
func NewCmdWorker(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Take the runs no process holds and execute them, each in a process of its own",
		Long: `Take the runs of the store (--store, $CRW_STORE: an etcd cluster; else the state folder) that
no process holds and that can go on, and execute each in a child process of its own, at most
--slots at a time: a run queued by crw flow start --queue, one whose process died (on an etcd
cluster, once its lease has expired: any host's worker resumes it), one whose decisions were
answered with --no-resume. A run whose last process stopped on an error (a divergence), a
paused one and a session run are left alone. Workers on any number of hosts share a cluster:
a run is held by one process at a time.

--offers says what this host offers the runs it takes: codex (an app-server run needs it),
repo:PATH (a run in the repository whose top level is PATH; repo:* any), auto (the default:
codex and repo:*, each checked on this host: a codex binary as the run names it, the
repository at its path with the commit the run's calls start from). A run that needs what the
worker does not offer, or what its host lacks, is left for another: the worker leaves a note on
it, which crw flow status and inspect show, and looks at it again a minute later.

SIGTERM or SIGINT stops the worker: its children are stopped (their calls in flight
interrupted, their runs left to resume, by another worker or crw flow resume) and waited for,
30 s at most (then killed: their runs are left as a crash leaves them). A line on stderr tells
of each run taken and of each child that ended; a child that ended without ending its run (its
workflow gone, say) has the last line of its log quoted there, and its run is taken again after
5 s, then twice as long each time up to 5 minutes.

Exit status: 0 once stopped by SIGTERM or SIGINT, 1 when it could not go on (the store cannot be read), 2 on bad
input (--slots, --offers).`,
		Example: `  CRW_STORE=etcd://10.0.0.1:2379/team/crw crw worker --slots 8`,
		Args:    cobra.NoArgs,
		RunE:    cmdutil.RunE(f, &opts.Common, opts, nil, runF, runWorker),
	}
	cmd.Flags().IntVar(&opts.Slots, "slots", DefaultSlots, "how many runs to execute at once")
	cmd.Flags().StringSliceVar(&opts.Offers, "offers", []string{"auto"}, "what this host offers runs: codex, repo:PATH, repo:* or auto (codex and repo:*, each checked on this host)")
	return cmd
}

func runWorker(opts *Options) error {
	if opts.Slots < 1 || opts.Slots > worker.MaxSlots {
		return errs.New(errs.InvalidRequest, "--slots must be 1 to %d, got %d", worker.MaxSlots, opts.Slots)
	}
	offers, err := worker.ParseOffers(opts.Offers)
	if err != nil {
		return errs.Field("offers", strings.Join(opts.Offers, ","), "%v", err)
	}
	svc, err := opts.Service()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(opts.Ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	return worker.Run(ctx, worker.Options{Service: svc, Slots: opts.Slots, Log: opts.IO.ErrOut, ID: svc.Host, Offers: offers})
}
