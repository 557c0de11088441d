// Package inspect is crw flow inspect: a run's diagnosis, with what its host adds.
package inspect

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
)

// Options are crw flow inspect's: the run.
type Options = cmdutil.RunOptions

// NewCmdInspect is crw flow inspect; runF, when not nil, runs in place of the command.
func NewCmdInspect(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	return cmdutil.NewRunCmd(f, runF, runInspect, &cobra.Command{
		Use:   "inspect RUN",
		Short: "A run's diagnosis: where it stands, what holds it, what it waits for, and what to do next",
	})
}

func runInspect(opts *Options) error {
	_, err := cmdutil.Show(&opts.Common, opts.Run, func(svc *engine.Service) (*engine.Inspection, error) {
		in, err := svc.Inspect(opts.Ctx, opts.Run)
		if err != nil {
			return nil, err
		}
		st, err := opts.Store()
		if err != nil {
			return nil, err
		}
		ops.HostState(st, in) // what the run's host adds
		return in, nil
	}, printInspection)
	return err
}

func printInspection(w io.Writer, in *engine.Inspection) {
	st := in.Status
	fmt.Fprintf(w, "run       %s\nstate     %s\n", st.Run, st.State)
	if st.Status != "" {
		fmt.Fprintf(w, "status    %s\n", st.Status)
	}
	fmt.Fprintf(w, "calls     %s\n", cmdutil.CountsLine(st.Calls))
	if len(in.InFlight) > 0 {
		fmt.Fprintf(w, "open      %s\n", strings.Join(in.InFlight, ", "))
	}
	for _, h := range in.Held {
		fmt.Fprintf(w, "held      node %s, by call %s (unknown outcome)\n", h.Node, h.Call)
	}
	for _, v := range in.Verdicts {
		fmt.Fprintf(w, "verdict   call %s %s, by %s%s\n", v.Call, v.Verdict, cmdutil.Dash(v.By), cmdutil.VerdictOutput(v.Output))
	}
	for _, d := range st.Decisions {
		fmt.Fprintf(w, "decision  %s: %s\n", d.ID, d.Question)
	}
	if st.Error != nil {
		fmt.Fprintf(w, "error     %s\n", cmdutil.FailureLine(st.Error))
	}
	if in.Log != "" {
		fmt.Fprintf(w, "log       %s\n", in.Log)
	}
	fmt.Fprintf(w, "backend   %s\n", in.Backend.Name)
	if in.Backend.Host != "" {
		fmt.Fprintf(w, "host      %s (%s)\n", in.Backend.Host, in.Backend.Reachable)
	}
	if in.Backend.HostLog != "" {
		fmt.Fprintf(w, "host log  %s\n", in.Backend.HostLog)
	}
	for _, n := range in.Next {
		fmt.Fprintf(w, "next      %s\n", n)
	}
}
