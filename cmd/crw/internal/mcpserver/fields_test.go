package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/tools"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// fields are every field an error of the engine or of ops can name.
func fields() []string { return slices.Concat(engine.Fields(backends()), ops.Fields) }

// TestEveryFieldHasAnArgument: every field the engine's errors can name (engine.Fields,
// ops.Fields) has an argument in the server's one table of them (tools.Args), an argument of a
// tool's input schema (a backend's option, of start's); the table names no field there is not.
func TestEveryFieldHasAnArgument(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	args := map[string][]string{} // argument: the tools that take it
	for name, tool := range r.Tools {
		data, _ := json.Marshal(tool.InputSchema)
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		require.NoError(t, json.Unmarshal(data, &s))
		for arg := range s.Properties {
			args[arg] = append(args[arg], name)
		}
	}
	all := fields()
	for _, f := range all {
		arg := tools.Args[f]
		if assert.NotEmpty(t, arg, "the field %s has no argument", f) {
			assert.NotEmpty(t, args[arg], "%s: no tool takes %s", f, arg)
		}
		if strings.HasPrefix(f, "backend_opts.") {
			assert.Contains(t, args[arg], "start", "%s: a backend's option is start's", f)
		}
	}
	for f := range tools.Args {
		assert.Contains(t, all, f, "tools.Args names a field no error names")
	}
}

// badArg is a tool's call with an argument the engine refuses (or the input schema, for one it
// bounds), and the error it answers.
type badArg struct {
	field  string
	tool   string
	args   map[string]any
	code   string // "": invalid_request
	detail string // the start of the error's detail
}

// schemaRefuses is the detail of arguments the input schema refuses (its enums and bounds),
// before the engine sees them.
const schemaRefuses = "arguments do not match the tool's input schema"

// startArgs are bad arguments of start, one at least for each option of a run.
func startArgs(dir, wf, repo string) []badArg {
	start := func(field string, args map[string]any, detail string) badArg {
		a := map[string]any{"workflow": wf, "backend": "fake", "no_repo": true}
		for k, v := range args {
			a[k] = v
		}
		return badArg{field: field, tool: "start", args: a, detail: detail}
	}
	session := func(field string, args map[string]any, detail string) badArg {
		a := start(field, args, detail)
		a.args["backend"], a.args["owner"], a.args["host"] = "session", "t1", "unix:///tmp/crw-fields.sock"
		return a
	}
	none := filepath.Join(dir, "none.json")
	return []badArg{
		start("workflow", map[string]any{"workflow": dir}, "workflow "+dir+": not a readable file"),
		// An input the engine would refuse is one the arguments' own reading refuses first.
		start("input", map[string]any{"input": json.RawMessage(`"\ud800"`)}, "arguments: invalid JSON: lone surrogate"),
		start("backend", map[string]any{"backend": "nope"}, schemaRefuses),
		start("pool", map[string]any{"pool": 0}, schemaRefuses),
		start("budget_tokens", map[string]any{"budget_tokens": -1}, schemaRefuses),
		start("lib_dirs", map[string]any{"lib": []string{wf}}, "lib "+wf+": not a folder"),
		start("limits.stack_depth", map[string]any{"max_stack_depth": 0}, schemaRefuses),
		start("limits.stack_depth", map[string]any{"max_stack_depth": 100001}, schemaRefuses),
		start("limits.heap_bytes", map[string]any{"max_heap_mib": 0}, schemaRefuses),
		start("limits.load_time", map[string]any{"max_load_time": "0s"}, "max_load_time: must be 1ms or more, got 0s"),
		start("limits.deadline", map[string]any{"deadline": "-1s"}, "deadline: must be 0 (none) or 1ms or more, got -1s"),
		start("limits.prompt_bytes", map[string]any{"max_prompt_kib": 0}, schemaRefuses),
		start("limits.log_bytes", map[string]any{"max_log_mib": 2048}, schemaRefuses),
		start("tier_steps", map[string]any{"tier_steps": "sometimes"}, schemaRefuses),
		start("tool_env", map[string]any{"tool_env": []string{"CRW_X=1"}}, "tool_env CRW_X: not settable"),
		start("tool_env", map[string]any{"tool_env": []string{"X"}}, `tool_env "X": not NAME=VALUE`),
		start("tool_path", map[string]any{"tool_path": []string{"bin"}}, `tool_path "bin": not an absolute directory path`),
		start("repo", map[string]any{"no_repo": false, "repo": wf}, "repo "+wf+": not a folder"),
		start("head", map[string]any{"no_repo": false, "repo": repo, "head": "nope"}, "head nope: "),
		start("repo_url", map[string]any{"no_repo": false, "repo": repo, "repo_url": "https://me:secret@git.example/app.git"}, "repo_url: holds a password"),
		start("no_repo", map[string]any{"head": "main"}, "no_repo: goes with no repository and no head"),
		start("backend_opts.answers", map[string]any{"answers": none}, "answers "+none+": cannot read"),
		start("backend_opts.codex", map[string]any{"codex": "/no/codex"}, "codex: an option of backend app-server or session, not of backend fake"),
		start("backend_opts.owner", map[string]any{"backend": "session", "owner": "a b"}, `owner: "a b" is not a thread id`),
		start("backend_opts.host", map[string]any{"backend": "session", "owner": "t1", "host": "x.sock"}, `host: "x.sock" is not unix:///absolute/path`),
		session("backend_opts.wake", map[string]any{"wake": "maybe"}, schemaRefuses),
		session("backend_opts.lost-after", map[string]any{"lost_after": "1ms"}, `lost_after: "1ms" is not a duration`),
		session("backend_opts.poll", map[string]any{"poll": "soon"}, `poll: "soon" is not a duration`),
		session("backend_opts.wake-after", map[string]any{"wake_after": "0s"}, `wake_after: "0s" is not a duration`),
		session("backend_opts.renotify-max", map[string]any{"renotify_max": "9999h"}, `renotify_max: "9999h" is not a duration`),
		session("backend_opts.unresponsive-after", map[string]any{"unresponsive_after": "-1m"}, `unresponsive_after: "-1m" is not a duration`),
	}
}

// requestArgs are bad arguments of the tools on the run run, waiting for its decision go
// after its call c1 was lost, and diverged, its workflow changed.
func requestArgs(run, diverged string) []badArg {
	return []badArg{
		{field: "verdict", tool: "recover", args: map[string]any{"run": run, "call": "c1", "verdict": "maybe"}, detail: schemaRefuses},
		{field: "output", tool: "recover", args: map[string]any{"run": run, "call": "c1", "verdict": "not_applied", "output": "x"}, detail: "output: only with the verdict applied"},
		{field: "value", tool: "answer", args: map[string]any{"run": run, "decision": "go", "value": map[string]any{"go": "yes"}, "no_resume": true},
			detail: `value: the answer to "go" (go on?) does not satisfy its schema`},
		{field: "limit", tool: "effects", args: map[string]any{"limit": 0}, detail: schemaRefuses},
		{field: "script", tool: "resume", args: map[string]any{"run": run, "script": diverged}, code: "revision_conflict",
			detail: "script " + diverged + ": takes another path than run " + run + " recorded"},
		{field: "run", tool: "shadow", args: map[string]any{"script": diverged}, detail: "give exactly one of run RUN and trace FILE"},
		{field: "trace", tool: "shadow", args: map[string]any{"script": diverged, "trace": diverged}, detail: "trace " + diverged + ": journal: import: line 1: "},
		{field: "run", tool: "shadow", args: map[string]any{"script": diverged, "run": run, "max_stack_depth": 50},
			detail: "limits are given to the shadow of a trace: a run's shadow runs within the limits the run recorded"},
		{field: "limits.prompt_bytes", tool: "shadow", args: map[string]any{"script": diverged, "trace": diverged, "max_prompt_kib": 0}, detail: schemaRefuses},
		{field: "limits.load_time", tool: "shadow", args: map[string]any{"script": diverged, "trace": diverged, "max_load_time": "soon"}, detail: `max_load_time: "soon" is not a duration`},
		{field: "backend_opts.answers", tool: "resume", args: map[string]any{"run": run, "answers": filepath.Join(filepath.Dir(diverged), "none.json")},
			detail: "answers " + filepath.Join(filepath.Dir(diverged), "none.json") + ": cannot read"},
	}
}

// TestAnArgumentTheEngineRefusesIsNamed: a bad value of each option start takes, and of the
// fields of the other tools the engine checks, is refused (by the engine, or by the input
// schema where it bounds the argument) naming the argument it was given as, never a flag;
// every field an error can name has a case here.
func TestAnArgumentTheEngineRefusesIsNamed(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(enginetest.DecisionWorkflow), 0o644))
	diverged := filepath.Join(dir, "diverged.js")
	require.NoError(t, os.WriteFile(diverged, []byte(strings.Replace(enginetest.DecisionWorkflow, `"try"`, `"other"`, 1)), 0o644))
	repo := enginetest.GitRepo(t, map[string]string{"README.md": "# x\n"})
	run := waitingRun(t, r.state, wf)

	covered := map[string]bool{}
	for i, tt := range slices.Concat(startArgs(dir, wf, repo), requestArgs(run, diverged)) {
		if slices.Contains([]string{"start", "recover", "answer", "resume"}, tt.tool) {
			tt.args["request_key"] = "bad-" + string(rune('a'+i))
		}
		a := r.Call(r.ctx, tt.tool, tt.args)
		code := tt.code
		if code == "" {
			code = "invalid_request"
		}
		assert.Equal(t, code, a.Code(), "%s: %s", tt.field, a.Text)
		detail, _ := a.Get("error.detail").(string)
		assert.True(t, strings.HasPrefix(detail, tt.detail), "%s: %q", tt.field, detail)
		assert.NotContains(t, detail, "--", tt.field)
		covered[tt.field] = true
	}
	for _, f := range fields() {
		assert.True(t, covered[f], "no case of a bad %s", f)
	}
	assert.Equal(t, 1, runCount(t, r.state), "a refused start leaves no run")
}

// waitingRun is a run of wf in the state folder, made in this process, whose call c1 was lost
// and which waits for its decision go.
func waitingRun(t *testing.T, state, wf string) string {
	t.Helper()
	ctx := context.Background()
	st, err := local.New(state)
	require.NoError(t, err)
	svc := enginetest.Service(st)
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	a, err := fake.ParseAnswers("a.json", []byte(`{"answers": [{"match": {"call": 1}, "turns": [{"lost": true}]}]}`))
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunWaitingDecision, end.Status, "%+v", end.Error)
	return id
}
