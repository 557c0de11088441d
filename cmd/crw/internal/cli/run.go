package cli

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crw-dev/crw/userfile"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/engine/session"
	"github.com/crw-dev/crw/engine/workspace"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/runtime/vm"
	"github.com/crw-dev/crw/store"
)

// RunOptions are the flags of `crw flow run`.
type RunOptions struct {
	Workflow     string
	Input        string
	Stdin        io.Reader // what --input @- reads
	Backend      string
	BackendOpts  map[string]string // the backend's options, as their flags set them
	Roles        string
	Pool         int
	BudgetTokens int64
	LibDirs      []string
	Limits       LimitFlags
	// The run's repository (docs/workspaces.md).
	Repo           string
	NoRepo         bool
	Head           string
	KeepWorktrees  bool
	TraceIsolation bool
	TierSteps      string
}

// LimitFlags bound what a run's workflow may take of the host; run.json records them, so every
// process of the run applies them.
type LimitFlags struct {
	StackDepth int
	HeapMiB    int64
	LoadTime   time.Duration
	Deadline   time.Duration
}

func newCmdRun(g *globals, streams IO) *cobra.Command {
	opts := &RunOptions{}
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
func addRunFlags(cmd *cobra.Command, g *globals, opts *RunOptions, defaultBackend string) (backendOpts func() map[string]string) {
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
	f.DurationVar(&opts.Limits.LoadTime, "max-load-time", vm.DefaultLoadTime, "how long the workflow's modules may take to load")
	f.DurationVar(&opts.Limits.Deadline, "deadline", 0, "how long each process of the run may run it (0: no deadline); then its calls are interrupted and the run fails")
	f.StringVar(&opts.Repo, "repo", "", "the git checkout the run's calls work in (default: the one around the working directory)")
	f.BoolVar(&opts.NoRepo, "no-repo", false, "run without a repository: executor calls are held worktree_failed")
	f.StringVar(&opts.Head, "head", "", "the ref the run's worktrees start from (default HEAD)")
	f.BoolVar(&opts.KeepWorktrees, "keep-worktrees", false, "leave the run's worktrees in place when it ends")
	f.BoolVar(&opts.TraceIsolation, "trace-isolation", false, "digest each call's directory, the checkout and the shared refs around every turn, and warn when a call wrote where it should not")
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

func runRun(ctx context.Context, g *globals, streams IO, opts *RunOptions) error {
	co, err := createOptions(opts)
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

// createOptions checks the flags a run is created with.
func createOptions(opts *RunOptions) (engine.CreateOptions, error) {
	var eo engine.CreateOptions
	if opts.Pool < 1 {
		return eo, errs.New(errs.InvalidRequest, "--pool: must be 1 or more, got %d", opts.Pool)
	}
	if opts.BudgetTokens < 0 {
		return eo, errs.New(errs.InvalidRequest, "--budget-tokens: must not be negative")
	}
	l := opts.Limits
	if l.StackDepth < 1 || l.HeapMiB < 1 || l.HeapMiB > 1<<30 || l.LoadTime <= 0 || l.Deadline < 0 {
		return eo, errs.New(errs.InvalidRequest, "--max-stack-depth, --max-heap and --max-load-time must be positive, --deadline not negative")
	}
	if st, err := os.Stat(opts.Workflow); err != nil || st.IsDir() {
		return eo, errs.New(errs.InvalidRequest, "workflow %s: not a readable file", opts.Workflow)
	}
	input, err := readInput(opts.Input, opts.Stdin)
	if err != nil {
		return eo, err
	}
	roles := inputs.RoleTable{}
	if opts.Roles != "" {
		if roles, err = inputs.LoadRoles(opts.Roles); err != nil {
			return eo, err
		}
	}
	libs, err := libFolders(opts.LibDirs)
	if err != nil {
		return eo, err
	}
	repo, err := runRepo(opts)
	if err != nil {
		return eo, err
	}
	return engine.CreateOptions{
		Workflow: opts.Workflow, Input: input, Backend: opts.Backend, BackendOpts: opts.BackendOpts,
		Roles: roles, Pool: runPool(opts), BudgetTokens: opts.BudgetTokens, LibDirs: libs,
		Limits: store.Limits{StackDepth: l.StackDepth, HeapBytes: l.HeapMiB << 20, LoadTimeMS: l.LoadTime.Milliseconds(), DeadlineMS: l.Deadline.Milliseconds()},
		Repo:   repo, Head: opts.Head, KeepWorktrees: opts.KeepWorktrees, TraceIsolation: opts.TraceIsolation, TierSteps: opts.TierSteps,
	}, nil
}

// runRepo is the repository a run is created with: --repo, else the git checkout around the
// working directory, if there is one; none with --no-repo.
func runRepo(opts *RunOptions) (string, error) {
	switch {
	case opts.NoRepo && (opts.Repo != "" || opts.Head != ""):
		return "", errs.New(errs.InvalidRequest, "--no-repo: the run has no repository, so it takes no --repo or --head")
	case opts.NoRepo:
		return "", nil
	case opts.Repo != "":
		abs, err := filepath.Abs(opts.Repo)
		if err != nil {
			return "", errs.New(errs.InvalidRequest, "--repo %s: %v", opts.Repo, err)
		}
		return abs, nil
	}
	cwd, err := os.Getwd()
	if err != nil {
		return "", nil
	}
	top, err := workspace.Find(context.Background(), cwd)
	if err != nil {
		if opts.Head != "" {
			return "", errs.New(errs.InvalidRequest, "--head %s: the working directory is in no git checkout: name one with --repo DIR", opts.Head)
		}
		return "", nil // no checkout around: a run without a repository
	}
	return top, nil
}

// runPool is the pool a run is created with: a session run's is at most agents.max_threads − 1,
// as the owner keeps one subagent slot for a helper of its own.
func runPool(opts *RunOptions) int {
	if opts.Backend == session.Name {
		return max(1, min(opts.Pool, session.MaxThreads("")-1))
	}
	return opts.Pool
}

// libFolders are the --lib folders, made absolute; each must be a folder.
func libFolders(dirs []string) ([]string, error) {
	var libs []string
	for _, d := range dirs {
		st, err := os.Stat(d)
		if err != nil || !st.IsDir() {
			return nil, errs.New(errs.InvalidRequest, "--lib %s: not a folder", d)
		}
		abs, _ := filepath.Abs(d)
		libs = append(libs, abs)
	}
	return libs, nil
}

// readInput reads --input: inline JSON, @FILE or @- (stdin, a pipe included); absent is null.
func readInput(s string, stdin io.Reader) (json.RawMessage, error) {
	if s == "" {
		return json.RawMessage("null"), nil
	}
	data := []byte(s)
	where := "--input"
	if s == "@-" {
		var err error
		if stdin == nil {
			stdin = strings.NewReader("")
		}
		if data, err = userfile.ReadStream(stdin, userfile.MaxData); err != nil {
			return nil, errs.New(errs.InvalidRequest, "--input @-: cannot read stdin: %v", err)
		}
		where = "--input @- (stdin)"
	} else if name, ok := strings.CutPrefix(s, "@"); ok {
		var err error
		if data, err = userfile.Read(name, userfile.MaxData); err != nil {
			return nil, errs.New(errs.InvalidRequest, "--input @%s: cannot read: %v", name, err)
		}
		where = "--input @" + name
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, errs.New(errs.InvalidRequest, "%s: not JSON: %v", where, err)
	}
	return json.RawMessage(strings.TrimSpace(string(data))), nil
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + strings.TrimSpace(l)
	}
	return strings.Join(lines, "\n")
}
