package runspec

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/engine/workspace"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store"
)

// Fields are the fields of a run's create options as their errors name them (errs.FieldError),
// the backend's options aside: each of those is backend.OptionField of its name.
var Fields = []string{
	"workflow", "input", "backend", "pool", "budget_tokens", "lib_dirs",
	"limits.stack_depth", "limits.heap_bytes", "limits.load_time", "limits.deadline", "limits.prompt_bytes", "limits.log_bytes",
	"tier_steps", "tool_env", "tool_path", "repo", "head", "repo_url",
}

// valid is what a run's create options are once checked: their defaults given, paths made
// absolute, the backend's options prepared, the limits and the tool environment as the spec
// records them, the repository and the commit its head names.
type valid struct {
	workflow    string
	backendOpts map[string]string
	pool        int
	libDirs     []string
	limits      store.Limits
	env         map[string]string
	repo        *repoAt
}

// validate checks every option a run is created with, the one place they are checked: each
// error is an errs.FieldError naming the option by its field (Fields). The options' defaults
// (input, backend, roles) are put in opts.
func validate(ctx context.Context, opts *Options, backends *backend.Registry) (*valid, error) {
	v := &valid{pool: DefaultPool}
	if opts.Pool != nil {
		if *opts.Pool < 1 {
			return nil, errs.Field("pool", "", "must be 1 or more, got %d", *opts.Pool)
		}
		v.pool = *opts.Pool
	}
	if opts.BudgetTokens < 0 {
		return nil, errs.Field("budget_tokens", "", "must not be negative, got %d", opts.BudgetTokens)
	}
	var err error
	if v.limits, err = opts.Limits.Check(); err != nil {
		return nil, err
	}
	if v.workflow, err = workflowFile(opts.Workflow); err != nil {
		return nil, err
	}
	if opts.Input == nil {
		opts.Input = json.RawMessage("null")
	}
	if err := checkJSONInput(opts.Input); err != nil {
		return nil, err
	}
	if v.libDirs, err = libFolders(opts.LibDirs); err != nil {
		return nil, err
	}
	switch opts.TierSteps {
	case "", "auto", "ask":
	default:
		return nil, errs.Field("tier_steps", "", "%q is not auto or ask", opts.TierSteps)
	}
	if opts.Backend == "" {
		opts.Backend = "fake"
	}
	if opts.Roles == nil {
		opts.Roles = inputs.RoleTable{}
	}
	// Checked as the user named them, so an error names the file as they wrote it.
	if v.backendOpts, err = backends.Prepare(opts.Backend, opts.BackendOpts); err != nil {
		return nil, err
	}
	if v.env, err = toolEnv(opts.ToolEnv, opts.ToolPath); err != nil {
		return nil, err
	}
	if v.repo, err = openRepo(ctx, opts.Repo, opts.Head); err != nil {
		return nil, err
	}
	if err := checkRepoURL(opts.RepoURL, v.repo != nil); err != nil {
		return nil, err
	}
	return v, nil
}

// Validate checks a run's create options as Make does, but loads and keeps nothing: what a dry
// run is refused. It returns the backend's options as the run would record them.
func Validate(ctx context.Context, opts Options, backends *backend.Registry) (map[string]string, error) {
	v, err := validate(ctx, &opts, backends)
	if err != nil {
		return nil, err
	}
	return v.backendOpts, nil
}

// workflowFile is the workflow's file, absolute: it must be a file.
func workflowFile(wf string) (string, error) {
	if st, err := os.Stat(wf); err != nil || st.IsDir() {
		return "", errs.Field("workflow", wf, "not a readable file")
	}
	abs, err := filepath.Abs(wf)
	if err != nil {
		return "", errs.Field("workflow", wf, "%v", err)
	}
	return abs, nil
}

// checkJSONInput refuses an input that is not one JSON value, or that a decoder would change
// (checkInput).
func checkJSONInput(in json.RawMessage) error {
	if !json.Valid(in) {
		var v any
		err := json.Unmarshal(in, &v)
		if err == nil {
			err = errors.New("not one JSON value")
		}
		return errs.Field("input", "", "not JSON: %v", err)
	}
	if err := checkInput(in); err != nil {
		return errs.Field("input", "", "%v", err)
	}
	return nil
}

// libFolders are the folders served as crw:lib/<path>, made absolute; each must be a folder.
func libFolders(dirs []string) ([]string, error) {
	var libs []string
	for _, d := range dirs {
		st, err := os.Stat(d)
		if err != nil || !st.IsDir() {
			return nil, errs.Field("lib_dirs", d, "not a folder")
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, errs.Field("lib_dirs", d, "%v", err)
		}
		libs = append(libs, abs)
	}
	return libs, nil
}

// checkRepoURL refuses a clone URL that a run cannot be created with: one without a
// repository, one git would read as an option, and one that holds a password, which would be
// written in the run's spec (git's credential helpers and ssh keys give it instead).
func checkRepoURL(raw string, hasRepo bool) error {
	switch {
	case raw == "":
		return nil
	case !hasRepo:
		return errs.Field("repo_url", raw, "the run has no repository")
	case strings.HasPrefix(raw, "-") || strings.ContainsAny(raw, "\x00\n\r"):
		return errs.Field("repo_url", "", "%q is not a clone URL", raw)
	}
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if _, has := u.User.Password(); has {
			return errs.Field("repo_url", "", "holds a password, which the run's spec would keep: give the URL without it, and the password through git's credential helper")
		}
	}
	return nil
}

// repoAt is the run's repository as its spec records it.
type repoAt struct{ Dir, head, commit string }

// openRepo checks the repository and head a run is created with: a directory in a git
// checkout, and a ref that names a commit of it, which the spec records.
func openRepo(ctx context.Context, dir, head string) (*repoAt, error) {
	if dir == "" {
		if head != "" {
			return nil, errs.Field("head", head, "the run has no repository")
		}
		return nil, nil
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, errs.Field("repo", dir, "not a folder")
	}
	repo, err := workspace.Open(ctx, dir)
	if errors.Is(err, workspace.ErrNotRepository) {
		return nil, errs.Field("repo", dir, "not in a git checkout")
	}
	if err != nil {
		return nil, errs.Field("repo", dir, "%v", err)
	}
	if head == "" {
		head = "HEAD"
	}
	commit, err := repo.Resolve(ctx, head)
	if err != nil {
		if _, headErr := repo.Resolve(ctx, "HEAD"); headErr != nil {
			return nil, errs.Field("head", head, "%v: the repository has no commit yet, so no head to start from", err)
		}
		return nil, errs.Field("head", head, "%v", err)
	}
	return &repoAt{Dir: repo.Dir, head: head, commit: commit}, nil
}
