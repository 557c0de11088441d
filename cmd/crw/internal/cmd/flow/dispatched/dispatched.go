// Package dispatched is crw flow dispatched: the owner's report of the subagent it started for a
// session run's step, and the run's reply.
package dispatched

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/session/bus"
)

// Options are crw flow dispatched's.
type Options struct {
	cmdutil.Common
	// Report is the step (its run, call, turn and attempt) and the subagent started for it.
	Report bus.Report
	// Wait is how long to wait for the run's reply.
	Wait time.Duration
}

// NewCmdDispatched is crw flow dispatched; runF, when not nil, runs in place of the command.
func NewCmdDispatched(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{Wait: 120 * time.Second}
	cmd := &cobra.Command{
		Use:   "dispatched RUN CALL --agent ID --k K --attempt N",
		Short: "Report the subagent the owner started for a session run's step, and print the run's reply",
		Long: `Report the subagent (the agent_id spawn_agent returned, or the target of a send_input)
that the owner started for step CALL/t<K>-a<N> of a session run, and wait for the run's reply:
bound (exit 0), or pair_mismatch, retry, refused or close (exit 1), each with what to do. A
report of a run no process holds is queued at once, and one that no process of the run answers
in time is queued then (exit 1): it stays in the run's inbox and the run answers it when it
reaches the step (crw flow next resumes a run no process holds). A report for a run that has ended, or for a step a paused
run no longer publishes, is answered close at once.

Exit status: 0 when the step was bound, 1 when the reply was pair_mismatch, retry, refused or
close, the report was queued, or the run is not there, 2 on bad input.`,
		Args: cobra.ExactArgs(2),
		RunE: cmdutil.RunE(f, &opts.Common, opts, opts.take, runF, runDispatched),
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Report.Agent, "agent", "", "the subagent's id (spawn_agent's agent_id)")
	fl.IntVar(&opts.Report.K, "k", 1, "the step's turn: 1 the task, 2 the repair")
	fl.IntVar(&opts.Report.Attempt, "attempt", 1, "the step's attempt")
	fl.Var((*cmdutil.WaitFlag)(&opts.Wait), "wait", "how long to wait for the run's reply (120, in seconds, or 2m)")
	_ = cmd.MarkFlagRequired("agent")
	return cmd
}

// take takes the step's run and call.
func (o *Options) take(_ *cobra.Command, args []string) {
	o.Report.Run, o.Report.Call = args[0], args[1]
}

func runDispatched(opts *Options) error {
	reply, err := cmdutil.Show(&opts.Common, opts.Report.Run, func(svc *engine.Service) (bus.Reply, error) {
		if err := cmdutil.CheckWait(opts.Wait); err != nil {
			return bus.Reply{}, err
		}
		st, err := opts.Host()
		if err != nil {
			return bus.Reply{}, err
		}
		return ops.Dispatched(opts.Ctx, svc, st, opts.Report, opts.Wait)
	}, printReply)
	if err != nil {
		return err
	}
	if reply.Reply != bus.ReplyBound {
		return cmdutil.Failed
	}
	return nil
}

func printReply(w io.Writer, reply bus.Reply) {
	fmt.Fprintf(w, "%s %s %s\n", reply.Reply, reply.Marker, reply.Agent)
	if reply.Detail != "" {
		fmt.Fprintln(w, reply.Detail)
	}
}
