// Package runspec is a run's spec: made from the options a run is created with (Make: the
// workflow loaded once to check it, the input, repository, head, tool environment, limits and
// backend options checked, each error naming the option), and checked again against the journal
// when a process goes on with the run (Check: run.json is a file the user can edit).
package runspec

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/engine/runner"
	"github.com/crw-dev/crw/engine/runner/ends"
	"github.com/crw-dev/crw/engine/workspace"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/lib"
	"github.com/crw-dev/crw/runtime/lint"
	"github.com/crw-dev/crw/runtime/loader"
	"github.com/crw-dev/crw/runtime/modules/agent"
	"github.com/crw-dev/crw/runtime/modules/crw"
	"github.com/crw-dev/crw/runtime/vm"
	"github.com/crw-dev/crw/store"
)

// Files keeps the code a run is created with (store.Store.PutFile).
type Files interface {
	PutFile(ctx context.Context, data []byte) (string, error)
}

// Options are what a run is created with; its spec records them.
type Options struct {
	Workflow     string
	Input        json.RawMessage   // nil: null
	Backend      string            // a name of the registry (default fake)
	BackendOpts  map[string]string // the backend's options
	Roles        inputs.RoleTable
	Pool         int // default 4
	BudgetTokens int64
	LibDirs      []string
	// OmitCallSeqs: the run's CallResults go without meta.startSeq and meta.endSeq (crw flow
	// run creates its runs so).
	OmitCallSeqs bool
	Limits       store.Limits
	// Repo is a directory in the run's git checkout ("": the run has no repository) and Head
	// the ref its calls start from ("": HEAD); see docs/workspaces.md.
	Repo, Head     string
	KeepWorktrees  bool
	TraceIsolation bool
	// ToolEnv and ToolPath are the run's tool environment (--tool-env NAME=VALUE, --tool-path
	// DIR): recorded in run.json's env, named in every turn's tools section, set in every
	// process of the run and in an App Server thread's shell.
	ToolEnv   map[string]string
	ToolPath  []string
	TierSteps string // auto (the default) or ask
	// Lint, when not nil, is given the workflow's modules as the check before the run loads
	// them (crw flow check's static pass).
	Lint *lint.Collector
}

// Make checks a workflow and its options and is the spec of a new run: the workflow loaded
// (a workflow that does not load makes no spec), the backend's options prepared by backends,
// the code the run is created with kept in files, each file by its digest.
func Make(ctx context.Context, opts Options, backends *backend.Registry, files Files) (*store.Spec, error) {
	if opts.Pool == 0 {
		opts.Pool = 4
	}
	if opts.Pool < 0 {
		return nil, errs.New(errs.InvalidRequest, "pool: must be 1 or more, got %d", opts.Pool)
	}
	if opts.BudgetTokens < 0 {
		return nil, errs.New(errs.InvalidRequest, "budget: must not be negative, got %d", opts.BudgetTokens)
	}
	if opts.Input == nil {
		opts.Input = json.RawMessage("null")
	}
	if !json.Valid(opts.Input) {
		return nil, errs.New(errs.InvalidRequest, "--input: not JSON")
	}
	if err := checkInput(opts.Input); err != nil {
		return nil, errs.New(errs.InvalidRequest, "--input: %v", err)
	}
	if opts.Backend == "" {
		opts.Backend = "fake"
	}
	if opts.Roles == nil {
		opts.Roles = inputs.RoleTable{}
	}
	wf, err := filepath.Abs(opts.Workflow)
	if err != nil {
		return nil, errs.New(errs.InvalidRequest, "workflow %s: %v", opts.Workflow, err)
	}
	// Checked as the user named them, so an error names the file as they wrote it.
	backendOpts, err := backends.Prepare(opts.Backend, opts.BackendOpts)
	if err != nil {
		return nil, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, errs.New(errs.CapabilityUnavailable, "no working directory").Wrap(err)
	}
	tmp, err := usableTempDir()
	if err != nil {
		return nil, err
	}
	env, err := toolEnv(opts.ToolEnv, opts.ToolPath)
	if err != nil {
		return nil, err
	}
	env["TMPDIR"] = tmp
	repo, err := openRepo(ctx, opts)
	if err != nil {
		return nil, err
	}
	// Load before anything is written: a workflow that does not load leaves no run behind.
	if opts.Limits.StackDepth < 0 || opts.Limits.HeapBytes < 0 || opts.Limits.LoadTimeMS < 0 || opts.Limits.DeadlineMS < 0 {
		return nil, errs.New(errs.InvalidRequest, "limits: must not be negative")
	}
	script, err := Load(ctx, wf, opts.LibDirs, opts.Input, opts.Limits, opts.Lint)
	if err != nil {
		return nil, err
	}
	// The store keeps the code the run was created with, each file by its digest.
	kept := map[string]string{}
	for path, data := range script.Sources() {
		if kept[path], err = files.PutFile(ctx, data); err != nil {
			return nil, err
		}
	}
	now := time.Now().UTC()
	spec := &store.Spec{
		Schema: store.SpecSchema, Run: NewRunID(now), Workflow: wf, ScriptDigest: script.Digest(), Files: kept,
		Backend: opts.Backend, BackendOptions: backendOpts, Cwd: cwd, Input: opts.Input, Pool: opts.Pool,
		BudgetTokens: opts.BudgetTokens, Roles: opts.Roles, LibDirs: opts.LibDirs, OmitCallSeqs: opts.OmitCallSeqs, Limits: limitsOrNil(opts.Limits),
		Env: env, CreatedAt: now,
		KeepWorktrees: opts.KeepWorktrees, TraceIsolation: opts.TraceIsolation, TierSteps: opts.TierSteps,
	}
	if repo != nil {
		spec.Repo, spec.Head, spec.HeadCommit = repo.Dir, repo.head, repo.commit
	}
	return spec, nil
}

// repoAt is the run's repository as its spec records it.
type repoAt struct{ Dir, head, commit string }

// openRepo checks the repository and head a run is created with: a directory in a git
// checkout, and a ref that names a commit of it, which the spec records.
func openRepo(ctx context.Context, opts Options) (*repoAt, error) {
	switch opts.TierSteps {
	case "", "auto", "ask":
	default:
		return nil, errs.New(errs.InvalidRequest, "--tier-steps: %q is not auto or ask", opts.TierSteps)
	}
	if opts.Repo == "" {
		if opts.Head != "" {
			return nil, errs.New(errs.InvalidRequest, "--head %s: the run has no repository (--repo DIR)", opts.Head)
		}
		return nil, nil
	}
	if st, err := os.Stat(opts.Repo); err != nil || !st.IsDir() {
		return nil, errs.New(errs.InvalidRequest, "--repo %s: not a folder", opts.Repo)
	}
	repo, err := workspace.Open(ctx, opts.Repo)
	if errors.Is(err, workspace.ErrNotRepository) {
		return nil, errs.New(errs.InvalidRequest, "--repo %s: not in a git checkout", opts.Repo)
	}
	if err != nil {
		return nil, errs.New(errs.InvalidRequest, "--repo %s: %v", opts.Repo, err)
	}
	head := opts.Head
	if head == "" {
		head = "HEAD"
	}
	commit, err := repo.Resolve(ctx, head)
	if err != nil {
		if _, headErr := repo.Resolve(ctx, "HEAD"); headErr != nil {
			return nil, errs.New(errs.InvalidRequest, "--head %s: %v: the repository has no commit yet, so no head to start from", head, err)
		}
		return nil, errs.New(errs.InvalidRequest, "--head %s: %v", head, err)
	}
	return &repoAt{Dir: repo.Dir, head: head, commit: commit}, nil
}

func limitsOrNil(l store.Limits) *store.Limits {
	if l == (store.Limits{}) {
		return nil
	}
	return &l
}

// Load loads a workflow in a throwaway VM to report load errors, its digest and its files.
func Load(ctx context.Context, wf string, libs []string, input json.RawMessage, limits store.Limits, c *lint.Collector) (*vm.VM, error) {
	script, err := vm.New(vm.Config{Workflow: wf, LibDirs: libs, Builtin: lib.FS, Input: input, Host: loadHost{},
		Limits: runner.VMLimits(&limits), Context: ctx, Lint: c})
	if err != nil {
		if ctx.Err() != nil {
			return nil, errs.New(errs.RunUnavailable, "the workflow was not loaded: this process was stopped").Wrap(err).
				Because("load", "process_stopped", "not_started", errs.Certain)
		}
		return nil, ends.LoadError(err)
	}
	return script, nil
}

// loadHost is the host of a load-only VM: loading evaluates modules, and nothing more may run.
type loadHost struct{}

var errNotWhileLoading = errs.Throw(errs.InvalidRequest, "", "not available while the workflow loads: call it from the entry function")

func (loadHost) Call(agent.Request, agent.Settle) error { return errNotWhileLoading }
func (loadHost) Now() time.Time                         { return time.Unix(0, 0).UTC() }
func (loadHost) Random() float64                        { return 0 }
func (loadHost) Log(level, message string)              {}
func (loadHost) TierStep(node, evidence string) (json.RawMessage, error) {
	return nil, errNotWhileLoading
}
func (loadHost) Commit(node, message string) (json.RawMessage, error)    { return nil, errNotWhileLoading }
func (loadHost) Decide(crw.Decision, func(json.RawMessage, error)) error { return errNotWhileLoading }
func (loadHost) Effect(string, func(json.RawMessage, error)) error       { return errNotWhileLoading }
func (loadHost) CheckSchema(s []byte) []loader.Problem                   { return inputs.CheckSchema(s) }
