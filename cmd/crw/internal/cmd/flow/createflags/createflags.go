// Package createflags is the flags a run is created with, as crw flow run and crw flow start
// both take them.
package createflags

import (
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/runtime/vm"
	"github.com/crw-dev/crw/store"
)

// Flags are the flags a run is created with, as the command line gives them: the run's options
// (ops.RunOptions) but for those the command line reads or converts, which are its own here and
// take the RunOptions' place: its input (JSON, @FILE or @-, read by Open), its pool and its
// limits (in the flags' units; each set in the RunOptions only when its flag is given, so that
// the engine's default is the one a flag not given takes and an explicit 0 is the engine's to
// refuse). The engine checks every option; a flag that does not parse is the command line's.
type Flags struct {
	ops.RunOptions
	Input  string
	Pool   int
	Limits LimitFlags
}

// LimitFlags bound what a run's workflow may take of the host, in the flags' units; run.json
// records them, so every process of the run applies them.
type LimitFlags struct {
	StackDepth int
	HeapMiB    int64
	LoadTime   time.Duration
	Deadline   time.Duration
	PromptKiB  int64
	LogMiB     int64
}

// Add declares the flags a run is created with on cmd, into opts: the backends' options among
// them, as the Factory's registry lists them. defaultBackend is the backend of a run that names
// none. The returned take, once the flags are parsed, puts into opts the workflow (the command's
// first argument), the backends' options and the pool and limits that were set.
func Add(cmd *cobra.Command, fac *cmdutil.Factory, opts *Flags, defaultBackend string) (take func(*cobra.Command, []string)) {
	f := cmd.Flags()
	f.StringVar(&opts.Input, "input", "", "the workflow's input: JSON, @FILE, or @- to read it from stdin")
	f.StringVar(&opts.Backend, "backend", defaultBackend, "where turns run: "+strings.Join(fac.Backends.Names(), ", "))
	values := map[string]*string{}
	for _, o := range fac.Backends.Options() {
		values[o.Name] = f.String(o.Name, "", o.Usage)
	}
	f.StringVar(&opts.Roles, "roles", "", "a role table file: each role's model and effort")
	f.IntVar(&opts.Pool, "pool", engine.DefaultPool, "how many calls may be in flight at once")
	f.Int64Var(&opts.BudgetTokens, "budget-tokens", 0, "hold calls that would start once the run has spent this many tokens (0: no budget)")
	f.StringArrayVar(&opts.LibDirs, "lib", nil, "a folder served as crw:lib/<path> (repeatable)")
	AddLimits(f, &opts.Limits)
	f.Int64Var(&opts.Limits.LogMiB, "max-log", store.DefaultLogBytes>>20, "MiB the run's log may take; past it the workflow's lines are dropped and counted")
	f.DurationVar(&opts.Limits.Deadline, "deadline", 0, "how long each process of the run may run it (0: no deadline); then its calls are interrupted and the run fails")
	f.StringVar(&opts.Repo, "repo", "", "the git checkout the run's calls work in (default: the one around the working directory)")
	f.BoolVar(&opts.NoRepo, "no-repo", false, "run without a repository: executor calls are held worktree_failed")
	f.StringVar(&opts.Head, "head", "", "the ref the run's worktrees start from (default HEAD)")
	f.StringVar(&opts.RepoURL, "repo-url", "", "a clone URL where the run keeps its head and moves its refs first: a host without the repository clones it from there")
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
		opts.Workflow, opts.BackendOpts = args[0], set
		opts.given(f.Changed)
	}
}

// AddLimits declares on f the flags of the limits that decide the path a workflow takes, into
// l: crw flow run and start, and crw flow shadow of a trace, which records none. (--max-log and
// --deadline bound a run's log and its processes, not its path: run and start declare them.)
func AddLimits(f *pflag.FlagSet, l *LimitFlags) {
	f.IntVar(&l.StackDepth, "max-stack-depth", vm.DefaultStackDepth, "the deepest call stack the workflow may have (at most 100000); deeper fails it with a RangeError")
	f.Int64Var(&l.HeapMiB, "max-heap", vm.DefaultHeapBytes>>20, "MiB of Go heap the workflow may hold (sampled every 50 ms); past it the run fails")
	f.Int64Var(&l.PromptKiB, "max-prompt", store.DefaultPromptBytes>>10, "KiB one call's prompt may take; a longer one throws invalid_request")
	f.DurationVar(&l.LoadTime, "max-load-time", vm.DefaultLoadTime, "how long the workflow's modules may take to load")
}

// Given are the limits whose flags changed says were given, in the engine's units; each other
// is nil, its default.
func (l *LimitFlags) Given(changed func(flag string) bool) engine.CreateLimits {
	var out engine.CreateLimits
	set := func(flag string, v func()) {
		if changed(flag) {
			v()
		}
	}
	set("max-stack-depth", func() { out.StackDepth = &l.StackDepth })
	set("max-heap", func() { out.HeapBytes = scaled(l.HeapMiB, 20) })
	set("max-prompt", func() { out.PromptBytes = scaled(l.PromptKiB, 10) })
	set("max-log", func() { out.LogBytes = scaled(l.LogMiB, 20) })
	set("max-load-time", func() { out.LoadTime = &l.LoadTime })
	set("deadline", func() { out.Deadline = &l.Deadline })
	return out
}

// given sets the RunOptions' pool and limits of the flags changed says were given.
func (opts *Flags) given(changed func(flag string) bool) {
	if changed("pool") {
		opts.RunOptions.Pool = &opts.Pool
	}
	opts.RunOptions.Limits = opts.Limits.Given(changed)
}

// scaled is v << shift (MiB or KiB to bytes), held at the bounds of an int64 where it would
// overflow: the engine refuses it as out of its bounds.
func scaled(v int64, shift uint) *int64 {
	out := v << shift
	switch {
	case v > math.MaxInt64>>shift:
		out = math.MaxInt64
	case v < math.MinInt64>>shift:
		out = math.MinInt64
	}
	return &out
}

// Open reads the run's input and role table, and opens the run service the run is created in
// with the engine's create options (which the engine checks).
func Open(c *cmdutil.Common, opts *Flags) (engine.CreateOptions, *engine.Service, error) {
	var co engine.CreateOptions
	input, err := c.ReadInput(opts.Input)
	if err != nil {
		return co, nil, err
	}
	opts.RunOptions.Input = input
	if co, err = ops.CreateOptions(&opts.RunOptions); err != nil {
		return co, nil, err
	}
	svc, err := c.Service()
	return co, svc, err
}
