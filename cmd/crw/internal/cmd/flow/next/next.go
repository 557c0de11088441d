// Package next is crw flow next: what a session run asks of its owner thread.
package next

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/nextview"
)

// Options are crw flow next's.
type Options struct {
	cmdutil.RunOptions
	// Wait is how long to wait for a step or a change of the run's state.
	Wait time.Duration
}

// NewCmdNext is crw flow next; runF, when not nil, runs in place of the command.
func NewCmdNext(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := cmdutil.NewRunCmd(f, opts, runF, runNext, &cobra.Command{
		Use:   "next RUN",
		Short: "Show a session run's steps for its owner: what to spawn, send or close",
		Long: `Show what a session run asks of its owner thread: its state (running, waiting_session,
paused, ended, starting), each waiting step with the host call to make (spawn_agent,
send_input or close_agent, with Codex's argument names) and the crw flow dispatched command
that reports it, the subagent slots (agents.max_threads of <CODEX_HOME>/config.toml, default
6) and a hint. It writes no row. A run no process holds that is neither paused nor over is
resumed, as crw flow resume RUN --detach does; a resume that cannot start is a warning, with
why and what to do. A starting run is read again for up to 15 s, whatever --wait says.

Exit status: 0 when the steps were shown (none included), 1 when the run is not there or could
not be read, 2 on bad input (a run that is not a session run included).`,
	})
	cmd.Flags().Var((*cmdutil.WaitFlag)(&opts.Wait), "wait", "wait up to this long (30, in seconds, or 30s) for a step or a change of the run's state")
	return cmd
}

func runNext(opts *Options) error {
	opts.WorksOn(opts.Run)
	if err := cmdutil.CheckWait(opts.Wait); err != nil {
		return err
	}
	_, err := cmdutil.Show(&opts.Common, opts.Run, func(svc *engine.Service) (nextview.NextView, error) {
		st, err := opts.Host()
		if err != nil {
			return nextview.NextView{}, err
		}
		return ops.Next(opts.Ctx, svc, st, opts.Run, opts.Wait)
	}, printNext)
	return err
}

func printNext(w io.Writer, v nextview.NextView) {
	fmt.Fprintf(w, "run    %s\nstate  %s\nslots  %d of %d open\n", v.Run, v.State, v.Slots.Open, v.Slots.Limit)
	spawns := false
	for _, st := range v.Steps {
		spawns = spawns || st.Action == bus.ActionSpawn
	}
	if spawns {
		fmt.Fprintln(w, "spawn formats")
		for _, f := range v.SpawnFormats {
			fmt.Fprintf(w, "  %-12s %s\n", f.Role, f.Call)
		}
	}
	for _, st := range v.Steps {
		fmt.Fprintf(w, "\nstep %s: %s %s\n", stepName(st.StepFile), st.HostCall.Tool, argsJSON(st.HostCall.Arguments))
		if st.Then != "" {
			fmt.Fprintf(w, "  then: %s\n", st.Then)
		}
	}
	fmt.Fprintf(w, "\n%s\n", v.Hint)
	for _, warning := range v.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
}

func stepName(st bus.StepFile) string {
	if st.Marker != "" {
		return st.Marker
	}
	return st.Call + " (close " + st.AgentID + ")"
}

func argsJSON(args map[string]any) string {
	b, _ := json.Marshal(args)
	return string(b)
}
