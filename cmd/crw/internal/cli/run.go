package cli

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/runtime/vm"
	"github.com/crw-dev/crw/store"
)

func newCmdRun(g *globals, streams IO) *cobra.Command {
	opts := &ops.RunOptions{}
	var backendOpts func() map[string]string
	cmd := &cobra.Command{
		Use:   "run WORKFLOW",
		Short: "Run a workflow in the foreground, with live progress",
		Long: `Run a workflow (a .js or .ts file) to its end in this process.

The workflow's return value is printed as JSON on stdout. Exit status: 0 when the workflow
returned, 1 when it threw or met a limit, 2 on bad input. With --json, stdout is one JSON object:
{"run": ID, "status": ..., "result": ..., "error": ..., "calls": {STATUS: COUNT}}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g.runOutput = true
			opts.Workflow = args[0]
			opts.BackendOpts = backendOpts()
			opts.Stdin = streams.In
			return runRun(cmd.Context(), g, streams, opts)
		},
	}
	backendOpts = addRunFlags(cmd, g, opts, "fake")
	return cmd
}

// addRunFlags declares the flags a run is created with (run and start): the backends' options
// among them, as the registry lists them. The returned function gives the options that were set.
// defaultBackend is the backend of a run that names none.
func addRunFlags(cmd *cobra.Command, g *globals, opts *ops.RunOptions, defaultBackend string) (backendOpts func() map[string]string) {
	f := cmd.Flags()
	f.StringVar(&opts.Input, "input", "", "the workflow's input: JSON, @FILE, or @- to read it from stdin")
	f.StringVar(&opts.Backend, "backend", defaultBackend, "where turns run: "+strings.Join(g.backends.Names(), ", "))
	values := map[string]*string{}
	for _, o := range g.backends.Options() {
		values[o.Name] = f.String(o.Name, "", o.Usage)
	}
	f.StringVar(&opts.Roles, "roles", "", "a role table file: each role's model and effort")
	f.IntVar(&opts.Pool, "pool", 4, "how many calls may be in flight at once")
	f.Int64Var(&opts.BudgetTokens, "budget-tokens", 0, "hold calls that would start once the run has spent this many tokens (0: no budget)")
	f.StringArrayVar(&opts.LibDirs, "lib", nil, "a folder served as crw:lib/<path> (repeatable)")
	f.IntVar(&opts.Limits.StackDepth, "max-stack-depth", vm.DefaultStackDepth, "the deepest call stack the workflow may have; deeper fails it with a RangeError")
	f.Int64Var(&opts.Limits.HeapMiB, "max-heap", vm.DefaultHeapBytes>>20, "MiB of Go heap the workflow may hold (sampled every 50 ms); past it the run fails")
	f.Int64Var(&opts.Limits.PromptKiB, "max-prompt", store.DefaultPromptBytes>>10, "KiB one call's prompt may take; a longer one throws invalid_request")
	f.Int64Var(&opts.Limits.LogMiB, "max-log", store.DefaultLogBytes>>20, "MiB the run's log may take; past it the workflow's lines are dropped and counted")
	f.DurationVar(&opts.Limits.LoadTime, "max-load-time", vm.DefaultLoadTime, "how long the workflow's modules may take to load")
	f.DurationVar(&opts.Limits.Deadline, "deadline", 0, "how long each process of the run may run it (0: no deadline); then its calls are interrupted and the run fails")
	f.StringVar(&opts.Repo, "repo", "", "the git checkout the run's calls work in (default: the one around the working directory)")
	f.BoolVar(&opts.NoRepo, "no-repo", false, "run without a repository: executor calls are held worktree_failed")
	f.StringVar(&opts.Head, "head", "", "the ref the run's worktrees start from (default HEAD)")
	f.BoolVar(&opts.KeepWorktrees, "keep-worktrees", false, "leave the run's worktrees in place when it ends")
	f.BoolVar(&opts.TraceIsolation, "trace-isolation", false, "digest each call's directory, the checkout and the shared refs around every turn, and warn when a call wrote where it should not")
	f.StringArrayVar(&opts.ToolEnv, "tool-env", nil, "NAME=VALUE: a variable every command of the run's agents takes, named in each turn's tools section (repeatable)")
	f.StringArrayVar(&opts.ToolPath, "tool-path", nil, "a directory of tools the run's agents' commands find before the shell's PATH (repeatable)")
	f.StringVar(&opts.TierSteps, "tier-steps", "auto", "auto: crw.tierStep moves a node up at once; ask: the step waits for the owner's decision")
	return func() map[string]string {
		set := map[string]string{}
		for name, v := range values {
			if f.Changed(name) {
				set[name] = *v
			}
		}
		return set
	}
}

// runOutput is the one JSON object `crw flow run --json` prints.
type runOutput struct {
	Run    *string         `json:"run"`
	Status string          `json:"status"`
	Result json.RawMessage `json:"result"`
	Error  any             `json:"error"`
	Calls  store.Counts    `json:"calls"`
}

func runRun(ctx context.Context, g *globals, streams IO, opts *ops.RunOptions) error {
	co, err := ops.CreateOptions(opts)
	if err != nil {
		return err
	}
	svc, err := g.service()
	if err != nil {
		return err
	}
	// A run of crw flow run gives its calls no startSeq and endSeq (call-result.md).
	co.OmitCallSeqs = true
	id, err := svc.Create(ctx, co)
	if err != nil {
		return err
	}
	g.runID = id
	return foreground(ctx, g, streams, svc, id)
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + strings.TrimSpace(l)
	}
	return strings.Join(lines, "\n")
}
