package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/check"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/errs"
)

func newCmdCheck(g *globals, streams IO) *cobra.Command {
	var input, roles string
	var libs []string
	var maxCalls, faults int
	var seed uint64
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

With --faults N the workflow is rehearsed again under N fault schedules, schedule i seeded
S+i (S is --seed, default 1): each call answers validly, needs its repair turn, ends null_model,
is refused, is held by a rate limit (the run pauses and is resumed) or loses its answer (the
call ends unknown; a verdict is given and the run resumed), and half the schedules crash the
process after a commit and resume it. A schedule under which the workflow throws, never
returns, or returns otherwise after the crash than without it is a finding, with its seed and
the faults it injected; --seed S alone rehearses schedule S only.

Each finding names its file, line and column. Exit status: 0 when nothing was found, 1 when
something was, 2 when the workflow does not load or an option is wrong.`,
		Example: `  crw flow check workflows/plan-build-review.js
  crw flow check wf.ts --input '{"task": "x"}' --json
  crw flow check workflows/triage.ts --faults 20
  crw flow check wf.js --seed 24`,
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
			if maxCalls < 0 || timeout < 0 || faults < 0 {
				return errs.New(errs.InvalidRequest, "--max-calls, --timeout and --faults must not be negative")
			}
			if faults > maxFaults {
				return errs.New(errs.InvalidRequest, "--faults %d: at most %d schedules", faults, maxFaults)
			}
			opts.Faults, opts.Seed = faults, seed
			if cmd.Flags().Changed("seed") && !cmd.Flags().Changed("faults") {
				opts.Faults = 1 // the one schedule the seed names
			}
			rep, err := check.Check(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if g.json {
				writeJSON(streams.Out, rep)
			} else {
				printCheck(streams.Out, rep)
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
	f.IntVar(&faults, "faults", 0, "rehearse the workflow under this many seeded fault schedules too")
	f.Uint64Var(&seed, "seed", check.DefaultSeed, "the seed of the first fault schedule (alone: rehearse that schedule only)")
	return cmd
}

// maxFaults bounds --faults: each schedule is a rehearsal or three.
const maxFaults = 10000

func printCheck(w io.Writer, rep *check.Report) {
	for _, f := range rep.Findings {
		where := f.File
		if f.Line > 0 {
			where = fmt.Sprintf("%s:%d:%d", f.File, f.Line, f.Col)
		}
		fmt.Fprintf(w, "%s: %s: %s", where, f.Rule, f.Message)
		if s := f.Schedule; s != nil {
			fmt.Fprintf(w, " [seed %d: %s]", s.Seed, check.Describe(s.Faults, s.CrashAfterCommit))
		}
		fmt.Fprintln(w)
	}
	if rep.More > 0 {
		fmt.Fprintf(w, "and %d more\n", rep.More)
	}
	fmt.Fprintf(w, "%d found; the rehearsal made %d calls and ended %s", len(rep.Findings)+rep.More, rep.Calls, rep.Status)
	if rep.Stopped != "" {
		fmt.Fprintf(w, ": %s", rep.Stopped)
	}
	if fr := rep.Faults; fr != nil {
		fmt.Fprintf(w, "; %s from seed %d (%d crashed and resumed): %s", count(fr.Schedules, "fault schedule"), fr.Seed, fr.Crashed, misbehaved(fr.Misbehaved))
	}
	fmt.Fprintln(w)
}

func misbehaved(seeds []uint64) string {
	if len(seeds) == 0 {
		return "none misbehaved"
	}
	list := make([]string, len(seeds))
	for i, s := range seeds {
		list[i] = strconv.FormatUint(s, 10)
	}
	what := "seeds"
	if len(seeds) == 1 {
		what = "seed"
	}
	return fmt.Sprintf("%d misbehaved (%s %s)", len(seeds), what, strings.Join(list, ", "))
}

// count is n things, in the singular when n is one.
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
