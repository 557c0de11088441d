// Package runspec is a run's spec: made from the options a run is created with (Make: the
// workflow loaded once to check it, the input, repository, head, tool environment, limits and
// backend options checked, the one place they are, each error an errs.FieldError naming the
// option by its field, Fields), and checked again against the journal
// when a process goes on with the run (Check: run.json is a file the user can edit).
package runspec

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/inputs"
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

// Options are what a run is created with; its spec records them. An option left at its zero
// value takes its default; where an explicit zero would mean something else (Pool, Limits) the
// option is a pointer, nil when unset.
type Options struct {
	Workflow     string
	Input        json.RawMessage   // nil: null
	Backend      string            // a name of the registry (default fake)
	BackendOpts  map[string]string // the backend's options
	Roles        inputs.RoleTable
	Pool         *int  // how many calls may be in flight: nil for DefaultPool; 0 is refused
	BudgetTokens int64 // 0: no budget (unset and an explicit 0 alike)
	LibDirs      []string
	// OmitCallSeqs: the run's CallResults go without meta.startSeq and meta.endSeq (crw flow
	// run creates its runs so).
	OmitCallSeqs bool
	Limits       Limits
	// Repo is a directory in the run's git checkout ("": the run has no repository) and Head
	// the ref its calls start from ("": HEAD); see docs/workspaces.md.
	Repo, Head string
	// RepoURL is where the run's refs are kept besides (store.Spec.RepoURL): "" for none.
	RepoURL string
	// NoRepoImplied: the run has no repository because none was given or refused and its
	// working directory is in no checkout. A workflow whose executor calls the static pass sees
	// is then refused, before any token is spent: they would end held worktree_failed.
	NoRepoImplied  bool
	KeepWorktrees  bool
	TraceIsolation bool
	// ToolEnv and ToolPath are the run's tool environment (NAME=VALUE entries, and directories
	// of tools): recorded in run.json's env, named in every turn's tools section, set in every
	// process of the run and in an App Server thread's shell.
	ToolEnv   map[string]string
	ToolPath  []string
	TierSteps string // auto (the default) or ask
	// KeepCode: every process of the run loads the code it is created with, as the store
	// keeps it (store.Spec.CodeKept), not the files on its host's disk.
	KeepCode bool
	// Host ties the run to a host, by its id (store.Spec.Host): "" for none.
	Host string
	// Lint, when not nil, is given the workflow's modules as the check before the run loads
	// them (crw flow check's static pass).
	Lint *lint.Collector
}

// DefaultPool is the pool of a run created with none.
const DefaultPool = 4

// Make checks a workflow and its options and is the spec of a new run: every option checked
// (validate: an error names the option's field), the workflow loaded (a workflow that does
// not load makes no spec), the backend's options prepared by backends, the code the run is
// created with kept in files, each file by its digest.
func Make(ctx context.Context, opts Options, backends *backend.Registry, files Files) (*store.Spec, error) {
	v, err := validate(ctx, &opts, backends)
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
	v.env["TMPDIR"] = tmp
	// Load before anything is written: a workflow that does not load leaves no run behind.
	lc := opts.Lint
	if lc == nil && opts.NoRepoImplied && v.repo == nil {
		lc = lint.New(nil) // to see the executor calls
	}
	script, err := Load(ctx, v.workflow, v.libDirs, opts.Input, v.limits, lc)
	if err != nil {
		return nil, err
	}
	if opts.NoRepoImplied && v.repo == nil && lc != nil {
		if ex := lc.Executors(); len(ex) > 0 {
			return nil, errs.Field("repo", "", "none: the working directory is in no git checkout, and the workflow calls the %s role at %s:%d:%d, whose calls need one (they would end held worktree_failed)",
				ex[0].Message, ex[0].File, ex[0].Line, ex[0].Col).NextNaming("{repo} DIR, or {no_repo} to run without one")
		}
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
		Schema: store.SpecSchema, Run: NewRunID(now), Workflow: v.workflow, ScriptDigest: script.Digest(), Files: kept,
		Backend: opts.Backend, BackendOptions: v.backendOpts, Cwd: cwd, Input: opts.Input, Pool: v.pool,
		BudgetTokens: opts.BudgetTokens, Roles: opts.Roles, LibDirs: v.libDirs, OmitCallSeqs: opts.OmitCallSeqs, Limits: limitsOrNil(v.limits),
		Env: v.env, CreatedAt: now,
		KeepWorktrees: opts.KeepWorktrees, TraceIsolation: opts.TraceIsolation, TierSteps: opts.TierSteps,
		CodeKept: opts.KeepCode, Host: opts.Host,
	}
	if v.repo != nil {
		spec.Repo, spec.Head, spec.HeadCommit = v.repo.Dir, v.repo.head, v.repo.commit
	}
	if opts.RepoURL != "" {
		// The head goes there first: a host that clones the URL finds the run's start.
		repo := &workspace.Repo{Dir: v.repo.Dir, Mirror: opts.RepoURL}
		if err := repo.SwapRef(ctx, workspace.HeadRef(spec.Run), spec.HeadCommit, ""); err != nil {
			return nil, errs.NewField(errs.CapabilityUnavailable, "repo_url", opts.RepoURL, "the run's head cannot be kept there: %v", err)
		}
		spec.RepoURL = opts.RepoURL
	}
	return spec, nil
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
		Limits: VMLimits(&limits), Context: ctx, Lint: c})
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

// VMLimits are the runtime's limits a spec records (nil: the defaults).
func VMLimits(l *store.Limits) vm.Limits {
	if l == nil {
		return vm.Limits{}
	}
	return vm.Limits{StackDepth: l.StackDepth, HeapBytes: l.HeapBytes, LoadTime: time.Duration(l.LoadTimeMS) * time.Millisecond}
}
