package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/appserver"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
)

// quoted is a command quoted in a detail (`codex app-server --listen`): its flags are not crw's.
var quoted = regexp.MustCompile("`[^`]*`")

// allBackends are the backends of crw's build, the session backend without a codex binary.
func allBackends() *backend.Registry {
	noCodex := func(string) (string, error) { return "", errors.New("no codex here") }
	return backend.NewRegistry(fake.Descriptor(), appserver.Descriptor(), session.Descriptor(session.Hosts{FindCodex: noCodex}))
}

// badOption is a create option given a value the engine refuses, and the error it is.
type badOption struct {
	field  string
	code   errs.Code // "": invalid_request
	detail string    // what the engine's detail says, the field named by its engine name
	set    func(o *engine.CreateOptions)
}

func badOptions(dir, wf, repo string) []badOption {
	session := func(opts map[string]string) func(o *engine.CreateOptions) {
		return func(o *engine.CreateOptions) { o.Backend, o.BackendOpts = "session", opts }
	}
	host := "unix:///tmp/crw-fields.sock"
	return []badOption{
		{"workflow", "", "workflow " + dir + ": not a readable file", func(o *engine.CreateOptions) { o.Workflow = dir }},
		{"input", "", "input: not JSON: ", func(o *engine.CreateOptions) { o.Input = json.RawMessage(`{"task": `) }},
		{"input", "", `input: a lone UTF-16 surrogate \ud800 at byte 1`, func(o *engine.CreateOptions) { o.Input = json.RawMessage(`"\ud800"`) }},
		{"backend", "", `backend "nope": not a backend of this build (one of app-server, fake, session)`, func(o *engine.CreateOptions) { o.Backend = "nope" }},
		{"pool", "", "pool: must be 1 or more, got 0", func(o *engine.CreateOptions) { o.Pool = new(0) }},
		{"budget_tokens", "", "budget_tokens: must not be negative, got -1", func(o *engine.CreateOptions) { o.BudgetTokens = -1 }},
		{"lib_dirs", "", "lib_dirs " + wf + ": not a folder", func(o *engine.CreateOptions) { o.LibDirs = []string{wf} }},
		{"limits.stack_depth", "", "limits.stack_depth: must be from 1 to 100000, got 0", func(o *engine.CreateOptions) { o.Limits.StackDepth = new(0) }},
		{"limits.stack_depth", "", "limits.stack_depth: must be from 1 to 100000, got 100001", func(o *engine.CreateOptions) { o.Limits.StackDepth = new(100001) }},
		{"limits.heap_bytes", "", "limits.heap_bytes: 1023 KiB; it must be from 1 MiB to 1 PiB", func(o *engine.CreateOptions) { o.Limits.HeapBytes = new(int64(1023 << 10)) }},
		{"limits.load_time", "", "limits.load_time: must be 1ms or more, got 0s", func(o *engine.CreateOptions) { o.Limits.LoadTime = new(time.Duration(0)) }},
		{"limits.deadline", "", "limits.deadline: must be 0 (none) or 1ms or more, got -1s", func(o *engine.CreateOptions) { o.Limits.Deadline = new(-time.Second) }},
		{"limits.prompt_bytes", "", "limits.prompt_bytes: 0 KiB; it must be from 1 KiB to 64 MiB", func(o *engine.CreateOptions) { o.Limits.PromptBytes = new(int64(0)) }},
		{"limits.log_bytes", "", "limits.log_bytes: 2 GiB; it must be from 1 MiB to 1 GiB", func(o *engine.CreateOptions) { o.Limits.LogBytes = new(int64(2 << 30)) }},
		{"tier_steps", "", `tier_steps: "sometimes" is not auto or ask`, func(o *engine.CreateOptions) { o.TierSteps = "sometimes" }},
		{"tool_env", "", "tool_env CRW_X: not settable", func(o *engine.CreateOptions) { o.ToolEnv = map[string]string{"CRW_X": "1"} }},
		{"tool_path", "", `tool_path "bin": not an absolute directory path`, func(o *engine.CreateOptions) { o.ToolPath = []string{"bin"} }},
		{"repo", "", "repo " + wf + ": not a folder", func(o *engine.CreateOptions) { o.Repo = wf }},
		{"repo", "", "repo " + dir + ": not in a git checkout", func(o *engine.CreateOptions) { o.Repo = dir }},
		{"head", "", "head main: the run has no repository", func(o *engine.CreateOptions) { o.Head = "main" }},
		{"head", "", "head nope: ", func(o *engine.CreateOptions) { o.Repo, o.Head = repo, "nope" }},
		{"repo_url", "", "repo_url https://git.example/app.git: the run has no repository", func(o *engine.CreateOptions) { o.RepoURL = "https://git.example/app.git" }},
		{"repo_url", "", `repo_url: "--upload-pack=touch x" is not a clone URL`, func(o *engine.CreateOptions) { o.Repo, o.RepoURL = repo, "--upload-pack=touch x" }},
		{"repo_url", "", "repo_url: holds a password, which the run's spec would keep", func(o *engine.CreateOptions) {
			o.Repo, o.RepoURL = repo, "https://me:secret@git.example/app.git"
		}},
		{"repo_url", errs.CapabilityUnavailable, "repo_url " + dir + "/gone.git: the run's head cannot be kept there", func(o *engine.CreateOptions) {
			o.Repo, o.RepoURL = repo, filepath.Join(dir, "gone.git")
		}},
		{"backend_opts.answers", "", "backend_opts.answers " + dir + "/none.json: cannot read", func(o *engine.CreateOptions) {
			o.BackendOpts = map[string]string{"answers": filepath.Join(dir, "none.json")}
		}},
		{"backend_opts.answers", "", "backend_opts.answers: an option of backend fake, not of backend session", session(map[string]string{"answers": "a.json"})},
		{"backend_opts.codex", errs.CapabilityUnavailable, "backend_opts.codex: no codex binary: /no/codex is not an executable", func(o *engine.CreateOptions) {
			o.Backend, o.BackendOpts = "app-server", map[string]string{"codex": "/no/codex"}
		}},
		{"backend_opts.codex", "", "backend_opts.codex: names the binary of a private app server, but the owner's app server at " + host + " serves the run",
			session(map[string]string{"owner": "t1", "host": host, "codex": "/bin/true"})},
		{"backend_opts.owner", "", `backend_opts.owner: "a b" is not a thread id`, session(map[string]string{"owner": "a b"})},
		{"backend_opts.host", "", `backend_opts.host: "x.sock" is not unix:///absolute/path`, session(map[string]string{"owner": "t1", "host": "x.sock"})},
		{"backend_opts.host", errs.CapabilityUnavailable, "backend_opts.host: none given: backend session has no host", session(map[string]string{"owner": "t1"})},
		{"backend_opts.wake", "", `backend_opts.wake: "maybe" is neither on nor off`, session(map[string]string{"owner": "t1", "host": host, "wake": "maybe"})},
		{"backend_opts.lost-after", "", `backend_opts.lost-after: "1ms" is not a duration from 1s to 24h0m0s`, session(map[string]string{"owner": "t1", "host": host, "lost-after": "1ms"})},
		{"backend_opts.poll", "", `backend_opts.poll: "soon" is not a duration`, session(map[string]string{"owner": "t1", "host": host, "poll": "soon"})},
		{"backend_opts.wake-after", "", `backend_opts.wake-after: "0s" is not a duration`, session(map[string]string{"owner": "t1", "host": host, "wake-after": "0s"})},
		{"backend_opts.renotify-max", "", `backend_opts.renotify-max: "9999h" is not a duration`, session(map[string]string{"owner": "t1", "host": host, "renotify-max": "9999h"})},
		{"backend_opts.unresponsive-after", "", `backend_opts.unresponsive-after: "-1m" is not a duration`, session(map[string]string{"owner": "t1", "host": host, "unresponsive-after": "-1m"})},
	}
}

// TestABadOptionIsAnErrorAboutItsField: a bad value of each option a run is created with, the
// backends' options among them, is refused by the engine as an error about the option's field
// (errs.FieldError, invalid_request unless what is missing is the host's), its detail naming
// the field as the engine names it and never a flag; no run is left. Every field a create's
// errors can name has a case here.
func TestABadOptionIsAnErrorAboutItsField(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	svc.Backends = allBackends()
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`export default async function main() { return 1; }`), 0o644))
	repo := enginetest.GitRepo(t, map[string]string{"README.md": "# x\n"})
	covered := map[string]bool{}
	for _, tt := range badOptions(dir, wf, repo) {
		opts := engine.CreateOptions{Workflow: wf}
		tt.set(&opts)
		_, err := svc.Create(ctx, opts)
		require.Error(t, err, tt.field)
		code := tt.code
		if code == "" {
			code = errs.InvalidRequest
		}
		assert.Equal(t, code, errs.CodeOf(err), "%s: %v", tt.field, err)
		var fe *errs.FieldError
		if assert.True(t, errors.As(err, &fe), "%s: %v", tt.field, err) {
			assert.Equal(t, tt.field, fe.Field, "%v", err)
		}
		e, _ := errs.As(err)
		assert.True(t, strings.HasPrefix(e.Detail, tt.detail), "%s: %q", tt.field, e.Detail)
		assert.NotRegexp(t, `(^|[ (])--[a-z]`, quoted.ReplaceAllString(e.Detail, ""), "%s: the engine names no flag of crw's", tt.field)
		covered[tt.field] = true
	}
	runs, err := svc.Store.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, runs, "a refused create leaves no run")
	for _, f := range engine.Fields(svc.Backends) {
		if !slices.Contains([]string{"verdict", "output", "value", "limit", "script"}, f) {
			assert.True(t, covered[f], "no case of a bad %s", f)
		}
	}
}

// TestABadRequestIsAnErrorAboutItsField: the service's other requests refuse a bad verdict, an
// output, an answer's value, a listing's limit, a resume's script, budget or answers file with
// an error about the field, as a create does, and write nothing.
func TestABadRequestIsAnErrorAboutItsField(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(recoverWorkflow), 0o644))
	diverged := filepath.Join(dir, "diverged.js")
	require.NoError(t, os.WriteFile(diverged, []byte(strings.Replace(recoverWorkflow, `prompt: "try"`, `prompt: "other"`, 1)), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	a, err := fake.ParseAnswers("a.json", []byte(`{"answers": [{"match": {"call": 1}, "turns": [{"lost": true}]}]}`))
	require.NoError(t, err)
	_, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
	require.NoError(t, err)
	before, err := svc.Rows(ctx, id)
	require.NoError(t, err)

	for _, tt := range []struct {
		field, detail string
		code          errs.Code
		do            func() error
	}{
		{"verdict", `verdict: "maybe" is neither applied`, errs.InvalidRequest, func() error {
			_, err := svc.Recover(ctx, id, "c1", decisions.Verdict{Verdict: "maybe"}, "t", false)
			return err
		}},
		{"verdict", "verdict: missing", errs.InvalidRequest, func() error {
			_, err := svc.Recover(ctx, id, "c1", decisions.Verdict{}, "t", false)
			return err
		}},
		{"output", "output: only with the verdict applied", errs.InvalidRequest, func() error {
			_, err := svc.Recover(ctx, id, "c1", decisions.Verdict{Verdict: decisions.VerdictNotApplied, Output: json.RawMessage(`"x"`)}, "t", false)
			return err
		}},
		{"output", "output: call c1 has no schema, so its answer is text", errs.InvalidRequest, func() error {
			_, err := svc.Recover(ctx, id, "c1", decisions.Verdict{Verdict: decisions.VerdictApplied, Output: json.RawMessage(`{"x": 1}`)}, "t", false)
			return err
		}},
		{"value", `value: the answer to "go" (go on?) does not satisfy its schema`, errs.InvalidRequest, func() error {
			_, err := svc.Answer(ctx, id, "go", json.RawMessage(`{"go": "yes"}`), "t", false)
			return err
		}},
		{"limit", "limit: 1 to 10000, got 0", errs.InvalidRequest, func() error { _, err := svc.Effects(ctx, 0); return err }},
		{"limit", "limit: 1 to ", errs.InvalidRequest, func() error { _, err := svc.AuditLog(ctx, "", 0); return err }},
		{"budget_tokens", "budget_tokens: must not be negative, got -1", errs.InvalidRequest, func() error {
			return svc.ChangeResume(ctx, id, engine.ResumeChange{BudgetTokens: new(int64(-1))}, "t")
		}},
		{"backend_opts.answers", "backend_opts.answers " + dir + "/none.json: cannot read", errs.InvalidRequest, func() error {
			return svc.ChangeResume(ctx, id, engine.ResumeChange{Answers: filepath.Join(dir, "none.json")}, "t")
		}},
		{"script", "script " + diverged + ": takes another path than run " + id + " recorded", errs.RevisionConflict, func() error {
			return svc.ChangeResume(ctx, id, engine.ResumeChange{Script: diverged}, "t")
		}},
	} {
		err := tt.do()
		assert.Equal(t, tt.code, errs.CodeOf(err), "%s: %v", tt.field, err)
		if fe := errs.FieldOf(err); assert.NotNil(t, fe, "%s: %v", tt.field, err) {
			assert.Equal(t, tt.field, fe.Field)
		}
		e, _ := errs.As(err)
		assert.True(t, strings.HasPrefix(e.Detail, tt.detail), "%s: %q", tt.field, e.Detail)
	}
	after, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	assert.Len(t, after, len(before), "a refused request writes nothing")
}

// TestEveryFieldAnErrorNamesIsListed: every field the engine's code builds an error about
// (errs.Field, errs.NewField) is written as a literal (or as a backend's option,
// backend.OptionField) and is one of engine.Fields, which the command line and the MCP server
// name: a field added without being listed fails here.
func TestEveryFieldAnErrorNamesIsListed(t *testing.T) {
	t.Parallel()
	known := engine.Fields(allBackends())
	found := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			arg, ok := fieldArg(call)
			if !ok {
				return true
			}
			found++
			field, literal := fieldOf(arg)
			if assert.True(t, literal, "%s: the field of %s is written as a literal", path, types(call)) && field != "" {
				assert.Contains(t, known, field, "%s: %s names a field engine.Fields does not list", path, types(call))
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, found, 40, "the engine's field errors were found")
}

// fieldArg is the field argument of a call of errs.Field or errs.NewField.
func fieldArg(call *ast.CallExpr) (ast.Expr, bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return nil, false
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "errs" {
		return nil, false
	}
	switch sel.Sel.Name {
	case "Field":
		return call.Args[0], true
	case "NewField":
		return call.Args[1], true
	}
	return nil, false
}

// fieldOf is the field arg writes: a literal, or backend.OptionField of a literal; a backend's
// option of a name given at run time ("", true) is one of the registered options.
func fieldOf(arg ast.Expr) (field string, ok bool) {
	if lit, ok := arg.(*ast.BasicLit); ok && lit.Kind == token.STRING {
		s, err := strconv.Unquote(lit.Value)
		return s, err == nil
	}
	call, ok := arg.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return "", false
	}
	switch fn := call.Fun.(type) {
	case *ast.SelectorExpr:
		ok = fn.Sel.Name == "OptionField"
	case *ast.Ident:
		ok = fn.Name == "OptionField"
	default:
		ok = false
	}
	if !ok {
		return "", false
	}
	if name, isLit := fieldOf(call.Args[0]); isLit && name != "" {
		return backend.OptionField(name), true
	}
	return "", true
}

func types(call *ast.CallExpr) string {
	return "errs." + call.Fun.(*ast.SelectorExpr).Sel.Name
}
