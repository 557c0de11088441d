// Package shadow is crw flow shadow: a script replayed against a recorded run with no backend.
package shadow

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/createflags"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store"
)

// Options are crw flow shadow's.
type Options struct {
	cmdutil.Common
	Script string
	// Run or Trace is the record: a run of the state folder, or a trace file.
	Run, Trace string
	LibDirs    []string
	// Limits are a trace's shadow's (a trace records none), in the flags' units; Given, those
	// given, in the engine's.
	Limits createflags.LimitFlags
	Given  engine.CreateLimits
	// NoRepo: the trace's run had no repository (a trace does not say; a run's spec does).
	NoRepo bool
}

// NewCmdShadow is crw flow shadow; runF, when not nil, runs in place of the command.
func NewCmdShadow(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Annotations: cmdutil.RunsWorkflows(),
		Use:         "shadow SCRIPT (--run RUN | --trace FILE)",
		Short:       "Replay a script, changed or not, against a recorded run with no backend",
		Long: `Run SCRIPT against a recorded run (its journal, or a trace written by crw flow trace)
with no backend at all, and report how it differs: calls matched, every divergence (position,
call, the inputs that differ, a short diff of prompts), recorded calls the script never made,
and new calls the record does not have (these resolve held so the script can go on), and the
script's result.

A run's shadow runs within the limits the run recorded (--max-stack-depth and the rest at its
creation); a trace records none, and its shadow runs within the defaults, or the limits given
with it. A run's shadow has no repository where the run had none; a trace does not say, and
the shadow of a trace of a run without one is given --no-repo (crw.commit then throws
invalid_request there, as in the run).

A commit, tier step or decision the script asks otherwise than the record has at its place
stops a resume there, whatever the script does with what it is thrown: the shadow stops there
too.

Exit status: 0 when the script makes exactly the recorded calls and returns, 1 when anything
differs, the script throws or the run is not there, 2 on bad input.`,
		// The flags are checked with the argument, before a run --run names by a prefix is
		// looked for: a combination no shadow takes is bad input, whether the run is there or not.
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.ExactArgs(1)(cmd, args); err != nil {
				return err
			}
			check := ops.ShadowOptions{Run: opts.Run, Trace: opts.Trace, NoRepo: opts.NoRepo, Limits: opts.Limits.Given(cmd.Flags().Changed)}
			return cmdutil.FlagNamed(check.CheckShadow(), nil)
		},
		RunE: cmdutil.RunE(f, &opts.Common, opts, opts.take, runF, runShadow),
	}
	cmd.Flags().StringVar(&opts.Run, "run", "", "a recorded run in the state folder")
	cmd.Flags().StringVar(&opts.Trace, "trace", "", "a trace file (crw-trace/1)")
	cmd.Flags().StringArrayVar(&opts.LibDirs, "lib", nil, "a folder served as crw:lib/<path> (repeatable)")
	createflags.AddLimits(cmd.Flags(), &opts.Limits)
	cmd.Flags().BoolVar(&opts.NoRepo, "no-repo", false, "the trace's run had no repository: crw.commit throws as it did there")
	return cmd
}

// take takes the script and the limits given.
func (o *Options) take(cmd *cobra.Command, args []string) {
	o.Script = args[0]
	o.Given = o.Limits.Given(cmd.Flags().Changed)
}

func runShadow(opts *Options) error {
	opts.WorksOn(opts.Run)
	if (opts.Run == "") == (opts.Trace == "") {
		return errs.New(errs.InvalidRequest, "give exactly one of --run RUN and --trace FILE")
	}
	svc, err := opts.Service()
	if err != nil {
		return err
	}
	report, err := ops.Shadow(opts.Ctx, svc, ops.ShadowOptions{Script: opts.Script, Run: opts.Run, Trace: opts.Trace, LibDirs: opts.LibDirs,
		Limits: opts.Given, NoRepo: opts.NoRepo, Log: opts.IO.ErrOut})
	if err != nil {
		return err
	}
	opts.Print(report, func(w io.Writer) {
		printReport(w, report)
	})
	if report.Differs() || report.Status == store.RunFailed {
		return cmdutil.Failed
	}
	return nil
}

func printReport(w io.Writer, r *shadow.Report) {
	fmt.Fprintf(w, "shadow of %s against run %s (backend %s)\n", r.Script, r.Run, r.Backend)
	fmt.Fprintf(w, "%d of %d recorded calls matched; %d divergence(s), %d never made, %d new\n",
		r.Matched, r.Recorded, len(r.Divergences), len(r.Unmade), len(r.New))
	for _, d := range r.Divergences {
		fmt.Fprintf(w, "\ndivergence at call %d (%s, node %q):\n", d.Position, d.Call, d.Node)
		for _, f := range d.Fields {
			if f.Field == "prompt" && d.Diff != "" {
				fmt.Fprintf(w, "  prompt differs:\n    %s\n", strings.ReplaceAll(d.Diff, "\n", "\n    "))
				continue
			}
			fmt.Fprintf(w, "  %s: recorded %q, script %q\n", f.Field, f.Expected, f.Actual)
		}
	}
	for _, c := range r.Unmade {
		fmt.Fprintf(w, "\nnever made: call %d (%s, %s/%s): %q\n", c.Position, c.Call, c.Role, c.Node, c.Prompt)
	}
	for _, c := range r.New {
		fmt.Fprintf(w, "\nnew call %d (%s/%s) at %s, held in the shadow: %q\n", c.Position, c.Role, c.Node, cmdutil.Dash(c.Site), c.Prompt)
	}
	switch r.Status {
	case store.RunCompleted:
		fmt.Fprintf(w, "\nresult: %s\n", r.Result)
	case store.RunFailed:
		if r.Stop != nil {
			fmt.Fprintf(w, "\nstopped where a resume stops: %s\n", r.Error.Text())
			break
		}
		fmt.Fprintf(w, "\nthe script threw: %s\n", r.Error.Text())
	}
}
