package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store/local"
)

func newCmdNext(g *globals, streams IO) *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "next RUN",
		Short: "Show a session run's steps for its owner: what to spawn, send or close",
		Long: `Show what a session run asks of its owner thread: its state (running, waiting_session,
paused, ended, starting), each waiting step with the host call to make (spawn_agent,
send_input or close_agent, with Codex's argument names) and the crw flow dispatched command
that reports it, the subagent slots (agents.max_threads of <CODEX_HOME>/config.toml, default
6) and a hint. It writes no row. A run no process holds that is neither paused nor over is
resumed, as crw flow resume RUN --detach does; a resume that cannot start is a warning, with
why and what to do. A starting run is read again for up to 15 s, whatever --wait says.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			g.runID = id
			if wait < 0 {
				return errs.New(errs.InvalidRequest, "--wait: must not be negative, got %s", wait)
			}
			svc, err := g.service()
			if err != nil {
				return err
			}
			view, err := ops.Next(cmd.Context(), svc, g.store.(*local.Store), id, wait)
			if err != nil {
				return err
			}
			printNext(g, streams, view)
			return nil
		},
	}
	cmd.Flags().Var((*waitFlag)(&wait), "wait", "wait up to this long (30, in seconds, or 30s) for a step or a change of the run's state")
	return cmd
}

func printNext(g *globals, streams IO, v session.NextView) {
	if g.json {
		writeJSON(streams.Out, v)
		return
	}
	fmt.Fprintf(streams.Out, "run    %s\nstate  %s\nslots  %d of %d open\n", v.Run, v.State, v.Slots.Open, v.Slots.Limit)
	spawns := false
	for _, st := range v.Steps {
		spawns = spawns || st.Action == session.ActionSpawn
	}
	if spawns {
		fmt.Fprintln(streams.Out, "spawn formats")
		for _, f := range v.SpawnFormats {
			fmt.Fprintf(streams.Out, "  %-12s %s\n", f.Role, f.Call)
		}
	}
	for _, st := range v.Steps {
		fmt.Fprintf(streams.Out, "\nstep %s: %s %s\n", stepName(st.StepFile), st.HostCall.Tool, argsJSON(st.HostCall.Arguments))
		if st.Then != "" {
			fmt.Fprintf(streams.Out, "  then: %s\n", st.Then)
		}
	}
	fmt.Fprintf(streams.Out, "\n%s\n", v.Hint)
	for _, w := range v.Warnings {
		fmt.Fprintf(streams.Out, "warning: %s\n", w)
	}
}

func newCmdDispatched(g *globals, streams IO) *cobra.Command {
	var agent string
	var k, attempt int
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "dispatched RUN CALL --agent ID --k K --attempt N",
		Short: "Report the subagent the owner started for a session run's step, and print the run's reply",
		Long: `Report the subagent (the agent_id spawn_agent returned, or the target of a send_input)
that the owner started for step CALL/t<K>-a<N> of a session run, and wait for the run's reply:
bound (exit 0), or pair_mismatch, retry, refused or close (exit 1), each with what to do. A
report of a run no process holds is queued at once, and one that no process of the run answers
in time is queued then (exit 1): it stays in the run's inbox and the run answers it when it
reaches the step (crw flow next resumes a run no process holds). A report for a run that has ended, or for a step a paused
run no longer publishes, is answered close at once.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			g.runID = id
			svc, err := g.service()
			if err != nil {
				return err
			}
			if wait < 0 {
				return errs.New(errs.InvalidRequest, "--wait: must not be negative, got %s", wait)
			}
			report := session.Report{Run: id, Call: args[1], Agent: agent, K: k, Attempt: attempt}
			reply, err := ops.Dispatched(cmd.Context(), svc, g.store.(*local.Store), report, wait)
			if err != nil {
				return err
			}
			if g.json {
				writeJSON(streams.Out, reply)
			} else {
				fmt.Fprintf(streams.Out, "%s %s %s\n", reply.Reply, reply.Marker, reply.Agent)
				if reply.Detail != "" {
					fmt.Fprintln(streams.Out, reply.Detail)
				}
			}
			if reply.Reply != session.ReplyBound {
				return errPrinted{code: exitFailed}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "the subagent's id (spawn_agent's agent_id)")
	f.IntVar(&k, "k", 1, "the step's turn: 1 the task, 2 the repair")
	f.IntVar(&attempt, "attempt", 1, "the step's attempt")
	wait = 120 * time.Second
	f.Var((*waitFlag)(&wait), "wait", "how long to wait for the run's reply (120, in seconds, or 2m)")
	_ = cmd.MarkFlagRequired("agent")
	return cmd
}

func stepName(st session.StepFile) string {
	if st.Marker != "" {
		return st.Marker
	}
	return st.Call + " (close " + st.AgentID + ")"
}

func argsJSON(args map[string]any) string {
	b, _ := json.Marshal(args)
	return string(b)
}

// waitFlag is a --wait of the owner's commands: a duration (30s, 2m), or a number of seconds
// (30) as an owner thread may write it.
type waitFlag time.Duration

func (w *waitFlag) String() string { return time.Duration(*w).String() }
func (w *waitFlag) Type() string   { return "duration" }

func (w *waitFlag) Set(v string) error {
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(secs) || math.IsInf(secs, 0) {
			return fmt.Errorf("%q is not a number of seconds", v)
		}
		if secs > float64(maxWait/time.Second) {
			return fmt.Errorf("%q seconds is more than %s", v, maxWait)
		}
		*w = waitFlag(time.Duration(secs * float64(time.Second)))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q is neither a number of seconds nor a duration (30s, 2m)", v)
	}
	*w = waitFlag(d)
	return nil
}

// maxWait bounds a --wait given in seconds, where a float could pass any duration.
const maxWait = 24 * time.Hour
