package ops

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/engine/backend/session/nextview"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/engine/workspace"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/userfile"
)

// RunOptions are what a run is created with, as crw flow run and start take them.
type RunOptions struct {
	Workflow     string
	Input        string    // JSON, @FILE or @- (Stdin); "" is null
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
	// The run's tool environment: NAME=VALUE entries and directories before $PATH.
	ToolEnv  []string
	ToolPath []string
}

// LimitFlags bound what a run's workflow may take of the host; run.json records them, so every
// process of the run applies them.
type LimitFlags struct {
	StackDepth int
	HeapMiB    int64
	LoadTime   time.Duration
	Deadline   time.Duration
	PromptKiB  int64
	LogMiB     int64
}

// CreateOptions checks the options a run is created with and reads its input and role table.
func CreateOptions(opts *RunOptions) (engine.CreateOptions, error) {
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
	if l.PromptKiB < 1 || l.PromptKiB > store.MaxPromptBytes>>10 {
		return eo, errs.New(errs.InvalidRequest, "--max-prompt: %d KiB; it must be 1 to %d KiB", l.PromptKiB, store.MaxPromptBytes>>10)
	}
	if l.LogMiB < 1 || l.LogMiB > store.MaxLogBytes>>20 {
		return eo, errs.New(errs.InvalidRequest, "--max-log: %d MiB; it must be 1 to %d MiB", l.LogMiB, store.MaxLogBytes>>20)
	}
	if st, err := os.Stat(opts.Workflow); err != nil || st.IsDir() {
		return eo, errs.New(errs.InvalidRequest, "workflow %s: not a readable file", opts.Workflow)
	}
	input, err := ReadInput(opts.Input, opts.Stdin)
	if err != nil {
		return eo, err
	}
	roles := inputs.RoleTable{}
	if opts.Roles != "" {
		if roles, err = inputs.LoadRoles(opts.Roles); err != nil {
			return eo, err
		}
	}
	libs, err := LibFolders(opts.LibDirs)
	if err != nil {
		return eo, err
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
		Workflow: opts.Workflow, Input: input, Backend: opts.Backend, BackendOpts: opts.BackendOpts,
		Roles: roles, Pool: runPool(opts), BudgetTokens: opts.BudgetTokens, LibDirs: libs,
		Limits: store.Limits{StackDepth: l.StackDepth, HeapBytes: l.HeapMiB << 20, LoadTimeMS: l.LoadTime.Milliseconds(), DeadlineMS: l.Deadline.Milliseconds(),
			PromptBytes: l.PromptKiB << 10, LogBytes: l.LogMiB << 20},
		Repo: repo, Head: opts.Head, KeepWorktrees: opts.KeepWorktrees, TraceIsolation: opts.TraceIsolation, TierSteps: opts.TierSteps,
	}, nil
}

// ToolEnv reads --tool-env NAME=VALUE entries; a name given twice is refused. The engine checks
// the names and values.
func ToolEnv(entries []string) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range entries {
		name, value, ok := strings.Cut(e, "=")
		if !ok || name == "" {
			return nil, errs.New(errs.InvalidRequest, "--tool-env %q: not NAME=VALUE", e)
		}
		if _, dup := out[name]; dup {
			return nil, errs.New(errs.InvalidRequest, "--tool-env: %s is given twice", name)
		}
		out[name] = value
	}
	return out, nil
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
		return max(1, min(opts.Pool, nextview.MaxThreads("")-1))
	}
	return opts.Pool
}

// LibFolders are the --lib folders, made absolute; each must be a folder.
func LibFolders(dirs []string) ([]string, error) {
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

// ReadInput reads --input: inline JSON, @FILE or @- (stdin, a pipe included); absent is null.
func ReadInput(s string, stdin io.Reader) (json.RawMessage, error) {
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
