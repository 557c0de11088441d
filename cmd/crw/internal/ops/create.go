package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/engine/backend/session/nextview"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/engine/workspace"
	"github.com/crw-dev/crw/errs"
)

// RunOptions are what a run is created with, as crw flow run and start and the MCP server's
// start take them: the engine's create options (engine.CreateOptions, which checks them all)
// but for the role table, a file here, the repository, found around the working directory
// unless named or refused, and the tool environment as NAME=VALUE entries.
type RunOptions struct {
	Workflow     string
	Input        json.RawMessage // nil: null
	Backend      string
	BackendOpts  map[string]string // the backend's options, by their names
	Roles        string            // a role table file
	Pool         *int              // nil: the engine's default (engine.DefaultPool)
	BudgetTokens int64             // 0: none
	LibDirs      []string
	Limits       engine.CreateLimits
	// The run's repository (docs/workspaces.md).
	Repo           string
	NoRepo         bool
	Head           string
	RepoURL        string // where the run's refs are kept besides (a clone URL)
	KeepWorktrees  bool
	TraceIsolation bool
	TierSteps      string
	// The run's tool environment: NAME=VALUE entries and directories before $PATH.
	ToolEnv  []string
	ToolPath []string
}

// Fields are the fields the errors of ops name (errs.FieldError, errs.NewNaming) beside the
// engine's (engine.Fields): of RunOptions those the engine has no option for, and of
// ShadowOptions the record replayed, a run or a trace file.
var Fields = []string{"no_repo", "run", "trace"}

// CreateOptions are the engine's create options of opts: its role table read, its repository
// found, its tool environment's entries split. The engine checks every option.
func CreateOptions(opts *RunOptions) (engine.CreateOptions, error) {
	var eo engine.CreateOptions
	roles := inputs.RoleTable{}
	if opts.Roles != "" {
		var err error
		if roles, err = inputs.LoadRoles(opts.Roles); err != nil {
			return eo, err
		}
	}
	repo, err := runRepo(opts)
	if err != nil {
		return eo, err
	}
	toolEnv, err := ToolEnv(opts.ToolEnv)
	if err != nil {
		return eo, err
	}
	return engine.CreateOptions{
		ToolEnv: toolEnv, ToolPath: opts.ToolPath,
		Workflow: opts.Workflow, Input: opts.Input, Backend: opts.Backend, BackendOpts: opts.BackendOpts,
		Roles: roles, Pool: runPool(opts), BudgetTokens: opts.BudgetTokens, LibDirs: opts.LibDirs, Limits: opts.Limits,
		Repo: repo, NoRepoImplied: repo == "" && !opts.NoRepo, Head: opts.Head, RepoURL: opts.RepoURL, KeepWorktrees: opts.KeepWorktrees, TraceIsolation: opts.TraceIsolation, TierSteps: opts.TierSteps,
	}, nil
}

// ToolEnv reads NAME=VALUE entries of a tool environment; a name given twice is refused. The
// engine checks the names and values.
func ToolEnv(entries []string) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range entries {
		name, value, ok := strings.Cut(e, "=")
		if !ok || name == "" {
			return nil, errs.Field("tool_env", fmt.Sprintf("%q", e), "not NAME=VALUE")
		}
		if _, dup := out[name]; dup {
			return nil, errs.Field("tool_env", "", "%s is given twice", name)
		}
		out[name] = value
	}
	return out, nil
}

// runRepo is the repository a run is created with: the one named, else the git checkout around
// the working directory, if there is one; none with NoRepo.
func runRepo(opts *RunOptions) (string, error) {
	switch {
	case opts.NoRepo && (opts.Repo != "" || opts.Head != ""):
		return "", errs.Field("no_repo", "", "goes with no repository and no head")
	case opts.NoRepo:
		return "", nil
	case opts.Repo != "":
		abs, err := filepath.Abs(opts.Repo)
		if err != nil {
			return "", errs.Field("repo", opts.Repo, "%v", err)
		}
		return abs, nil
	}
	cwd, err := os.Getwd()
	if err != nil {
		return "", nil
	}
	top, err := workspace.Find(context.Background(), cwd)
	if err != nil {
		return "", nil // no checkout around: a run without a repository
	}
	return top, nil
}

// runPool is the pool a run is created with: a session run's is at most agents.max_threads − 1,
// as the owner keeps one subagent slot for a helper of its own. A pool below 1 is left for the
// engine to refuse.
func runPool(opts *RunOptions) *int {
	if opts.Backend != session.Name || (opts.Pool != nil && *opts.Pool < 1) {
		return opts.Pool
	}
	pool := engine.DefaultPool
	if opts.Pool != nil {
		pool = *opts.Pool
	}
	pool = max(1, min(pool, nextview.MaxThreads("")-1))
	return &pool
}
