package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine/check"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/errs"
)

func newCmdCheck(g *globals, streams IO) *cobra.Command {
	var input, roles string
	var libs []string
	var maxCalls int
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "check WORKFLOW",
		Short: "Find a workflow's mistakes before any token is spent: a static pass, then a rehearsal on the fake backend",
		Long: `Load the workflow and pass over every module of its own (agent.call options it does not take,
with a did-you-mean; unknown roles and efforts; a missing role or prompt; schemas written out that
are not strict; named imports crw and crw:agent do not export; timers), then rehearse it on the
fake backend with answers synthesized from each call's schema, in memory: no journal, no run
folder, no token. The rehearsal adds what only running finds: calls refused (a schema that is not
strict, a pair the role table refuses), agent.calls whose promise was never awaited, and what the
workflow threw. crw.decide is answered with a synthesized answer and crw.commit commits nothing.

Each finding names its file, line and column. Exit status: 0 when nothing was found, 1 when
something was, 2 when the workflow does not load or an option is wrong.`,
		Example: `  crw flow check workflows/plan-build-review.js
  crw flow check wf.ts --input '{"task": "x"}' --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if st, err := os.Stat(args[0]); err != nil || st.IsDir() {
				return errs.New(errs.InvalidRequest, "workflow %s: not a readable file", args[0])
			}
			in, err := ops.ReadInput(input, streams.In)
			if err != nil {
				return err
			}
			opts := check.Options{Workflow: args[0], Input: in, MaxCalls: maxCalls, Timeout: timeout}
			if roles != "" {
				if opts.Roles, err = inputs.LoadRoles(roles); err != nil {
					return err
				}
			}
			if opts.LibDirs, err = ops.LibFolders(libs); err != nil {
				return err
			}
			if maxCalls < 0 || timeout < 0 {
				return errs.New(errs.InvalidRequest, "--max-calls and --timeout must not be negative")
			}
			rep, err := check.Check(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if g.json {
				writeJSON(streams.Out, rep)
			} else {
				for _, f := range rep.Findings {
					where := f.File
					if f.Line > 0 {
						where = fmt.Sprintf("%s:%d:%d", f.File, f.Line, f.Col)
					}
					fmt.Fprintf(streams.Out, "%s: %s: %s\n", where, f.Rule, f.Message)
				}
				if rep.More > 0 {
					fmt.Fprintf(streams.Out, "and %d more\n", rep.More)
				}
				fmt.Fprintf(streams.Out, "%d found; the rehearsal made %d calls and ended %s", len(rep.Findings)+rep.More, rep.Calls, rep.Status)
				if rep.Stopped != "" {
					fmt.Fprintf(streams.Out, ": %s", rep.Stopped)
				}
				fmt.Fprintln(streams.Out)
			}
			if len(rep.Findings) > 0 {
				return errPrinted{code: exitFailed}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&input, "input", "", "the workflow's input: JSON, @FILE, or @- to read it from stdin")
	f.StringVar(&roles, "roles", "", "a role table file: each role's model and effort")
	f.StringArrayVar(&libs, "lib", nil, "a folder served as crw:lib/<path> (repeatable)")
	f.IntVar(&maxCalls, "max-calls", check.DefaultMaxCalls, "stop the rehearsal after this many calls")
	f.DurationVar(&timeout, "timeout", check.DefaultTimeout, "stop the rehearsal after this long")
	return cmd
}
