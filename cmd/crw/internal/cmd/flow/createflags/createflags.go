// Package createflags is the flags a run is created with, as crw flow run and crw flow start
// both take them.
package createflags

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/runtime/vm"
	"github.com/crw-dev/crw/store"
)

// Add declares the flags a run is created with on cmd, into opts: the backends' options among
// them, as the Factory's registry lists them. defaultBackend is the backend of a run that names
// none. The returned take, once the flags are parsed, puts into opts the workflow (the command's
// first argument), the backends' options that were set and the stdin --input @- reads.
func Add(cmd *cobra.Command, fac *cmdutil.Factory, opts *ops.RunOptions, defaultBackend string) (take func(*cobra.Command, []string)) {
	f := cmd.Flags()
	f.StringVar(&opts.Input, "input", "", "the workflow's input: JSON, @FILE, or @- to read it from stdin")
	f.StringVar(&opts.Backend, "backend", defaultBackend, "where turns run: "+strings.Join(fac.Backends.Names(), ", "))
	values := map[string]*string{}
	for _, o := range fac.Backends.Options() {
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
	return func(_ *cobra.Command, args []string) {
		set := map[string]string{}
		for name, v := range values {
			if f.Changed(name) {
				set[name] = *v
			}
		}
		opts.Workflow, opts.BackendOpts, opts.Stdin = args[0], set, fac.IOStreams.In
	}
}

// Open checks what the run is to be created with, reads its input and role table, and opens the
// run service it is created in.
func Open(c *cmdutil.Common, opts *ops.RunOptions) (engine.CreateOptions, *engine.Service, error) {
	co, err := ops.CreateOptions(opts)
	if err != nil {
		return co, nil, err
	}
	svc, err := c.Service()
	return co, svc, err
}
