// Package check is crw flow check: a workflow's mistakes found by a static pass and rehearsals
// on the fake backend, before any token is spent.
package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/check"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/engine/workspace"
	"github.com/crw-dev/crw/errs"
)

// Options are crw flow check's.
type Options struct {
	cmdutil.Common
	Workflow string
	// Input is --input as given: JSON, @FILE or @-.
	Input    string
	Roles    string
	LibDirs  []string
	MaxCalls int
	Timeout  time.Duration
	Faults   int
	Seed     uint64
	// SeedOnly: --seed was given without --faults, so the one schedule it names is rehearsed.
	SeedOnly bool
	// Repo is the repository the run will have (default: the checkout the working directory
	// is in); NoRepo: it will have none.
	Repo   string
	NoRepo bool
}

// maxFaults bounds --faults: each schedule is a rehearsal or three.
const maxFaults = 10000

// NewCmdCheck is crw flow check; runF, when not nil, runs in place of the command.
func NewCmdCheck(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Annotations: cmdutil.RunsWorkflows(),
		Use:         "check WORKFLOW",
		Short:       "Find a workflow's mistakes before any token is spent: a static pass, then a rehearsal on the fake backend",
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

Each finding names its file, line and column.

Exit status: 0 when nothing was found, 1 when something was (a crw:lib/schemas export that is
not strict among them, at its declaration), 2 when the workflow does not load otherwise or an
option is wrong.`,
		Example: `  crw flow check workflows/plan-build-review.js
  crw flow check wf.ts --input '{"task": "x"}' --json
  crw flow check workflows/triage.ts --faults 20
  crw flow check wf.js --seed 24`,
		Args: cobra.ExactArgs(1),
		RunE: cmdutil.RunE(f, &opts.Common, opts, opts.take, runF, runCheck),
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Input, "input", "", "the workflow's input: JSON, @FILE, or @- to read it from stdin")
	fl.StringVar(&opts.Roles, "roles", "", "a role table file: each role's model and effort")
	fl.StringArrayVar(&opts.LibDirs, "lib", nil, "a folder served as crw:lib/<path> (repeatable)")
	fl.IntVar(&opts.MaxCalls, "max-calls", check.DefaultMaxCalls, "stop the rehearsal after this many calls")
	fl.DurationVar(&opts.Timeout, "timeout", check.DefaultTimeout, "stop the rehearsal after this long")
	fl.IntVar(&opts.Faults, "faults", 0, "rehearse the workflow under this many seeded fault schedules too")
	fl.Uint64Var(&opts.Seed, "seed", check.DefaultSeed, "the seed of the first fault schedule (alone: rehearse that schedule only)")
	fl.StringVar(&opts.Repo, "repo", "", "check it for a run in this repository (default: the checkout the working directory is in)")
	fl.BoolVar(&opts.NoRepo, "no-repo", false, "check it for a run without a repository")
	cmd.MarkFlagsMutuallyExclusive("repo", "no-repo")
	return cmd
}

// take takes the workflow and whether --seed came alone.
func (o *Options) take(cmd *cobra.Command, args []string) {
	o.Workflow, o.SeedOnly = args[0], cmd.Flags().Changed("seed") && !cmd.Flags().Changed("faults")
}

func runCheck(opts *Options) error {
	co, err := checkOptions(opts)
	if err != nil {
		return err
	}
	rep, err := check.Check(opts.Ctx, co)
	if err != nil {
		return err
	}
	opts.Print(rep, func(w io.Writer) {
		printReport(w, rep)
	})
	if len(rep.Findings) > 0 {
		return cmdutil.Failed
	}
	return nil
}

// checkOptions are the rehearsals' options, read from the flags and checked but for those of
// the run it rehearses (its workflow, input and lib folders), which the engine checks.
func checkOptions(opts *Options) (check.Options, error) {
	in, err := opts.ReadInput(opts.Input)
	if err != nil {
		return check.Options{}, err
	}
	co := check.Options{Workflow: opts.Workflow, Input: in, LibDirs: opts.LibDirs, MaxCalls: opts.MaxCalls, Timeout: opts.Timeout}
	switch {
	case opts.NoRepo:
		co.NoRepo, co.NoRepoAsked = true, true
	case opts.Repo != "":
		if _, err := workspace.Find(opts.Ctx, opts.Repo); err != nil {
			return co, errs.Field("repo", opts.Repo, "not a git checkout: %v", err)
		}
	default:
		co.NoRepo = noCheckoutHere(opts.Ctx)
	}
	if opts.Roles != "" {
		if co.Roles, err = inputs.LoadRoles(opts.Roles); err != nil {
			return co, err
		}
	}
	if opts.MaxCalls < 0 || opts.Timeout < 0 || opts.Faults < 0 {
		return co, errs.New(errs.InvalidRequest, "--max-calls, --timeout and --faults must not be negative")
	}
	if opts.Faults > maxFaults {
		return co, errs.New(errs.InvalidRequest, "--faults %d: at most %d schedules", opts.Faults, maxFaults)
	}
	co.Faults, co.Seed = opts.Faults, opts.Seed
	if opts.SeedOnly {
		co.Faults = 1 // the one schedule the seed names
	}
	return co, nil
}

func printReport(w io.Writer, rep *check.Report) {
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

// noCheckoutHere tells whether the working directory is in no git checkout: a run started here
// without --repo would have no repository.
func noCheckoutHere(ctx context.Context) bool {
	cwd, err := os.Getwd()
	if err != nil {
		return false
	}
	_, err = workspace.Find(ctx, cwd)
	return errors.Is(err, workspace.ErrNotRepository)
}
