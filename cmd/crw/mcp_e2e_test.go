package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/mcptest"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/internal/mockmodel"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// mcpNamespace is where Codex 0.169.0 puts the tools of the MCP server [mcp_servers.crw]: a
// namespace of functions named as the server names them, which the model calls as
// {"namespace": "mcp__crw", "name": "start"} (mcp__crw__start).
const mcpNamespace = "mcp__crw"

// codexRig is a real Codex app server whose config.toml runs crw mcp as its MCP server crw, and
// whose model is the mock, scripted to call crw's tools in turns of one thread.
type codexRig struct {
	t       *testing.T
	ctx     context.Context
	mock    *mockmodel.Server
	client  *codex.Client
	thread  string
	state   string
	script  []mockmodel.OwnerStep
	outputs []string // what Codex sent the model back for each tool call, in order
}

// stdioServer is the [mcp_servers.crw] entry that runs crw mcp on the state folder.
func stdioServer(t *testing.T, state string) string {
	crw, err := exec.LookPath("crw")
	require.NoError(t, err, "the test binary doubles as crw on PATH")
	// Codex starts the server with an environment of its own choosing: what crw needs of the
	// test's (the PATH its run processes are found on) is given.
	return fmt.Sprintf(`
[mcp_servers.crw]
command = %q
args = ["mcp", "--state", %q]
env = { PATH = %q, GORACE = "atexit_sleep_ms=0" }
default_tools_approval_mode = "approve"
startup_timeout_sec = 60
tool_timeout_sec = 120
`, crw, state, os.Getenv("PATH"))
}

// newCodexRig starts the app server with the [mcp_servers.crw] entry server gives for the
// state folder.
func newCodexRig(t *testing.T, server func(t *testing.T, state string) string) *codexRig {
	codexBin := mockmodel.Codex(t) // skips without a codex binary, as every real-Codex test does
	dir := t.TempDir()
	r := &codexRig{t: t, mock: mockmodel.New(nil), state: filepath.Join(dir, "state")}
	t.Cleanup(r.mock.Close)
	home, work := filepath.Join(dir, "home"), filepath.Join(dir, "work")
	require.NoError(t, os.Mkdir(work, 0o755))
	require.NoError(t, r.mock.WriteCodexHome(home))
	config := filepath.Join(home, "config.toml")
	base, err := os.ReadFile(config)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(config, append(base, server(t, r.state)...), 0o644))

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	r.ctx = ctx
	srv, err := codex.StartServer(ctx, codex.ServerOptions{Codex: codexBin, CodexHome: home, Log: filepath.Join(dir, "app-server.log"),
		Client: codex.ClientOptions{Timeout: 2 * time.Minute}})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Stop(5 * time.Second) })
	r.client = srv.Client()
	th, err := r.client.StartThread(ctx, codex.ThreadParams{Cwd: work, ApprovalPolicy: "never", Sandbox: "read-only"})
	require.NoError(t, err)
	r.thread = th.Thread.ID
	r.waitTools()
	return r
}

// waitTools runs turns in which the model only answers until one offers crw's tools: Codex
// does not hold a turn back for its MCP servers' start, and on a loaded machine the first
// turns come before crw mcp has listed its tools (a call of one then is "unsupported").
func (r *codexRig) waitTools() {
	r.t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; {
		r.mock.Own(r.thread, mockmodel.OwnerStep{Text: "Ready."})
		turnID, err := r.client.StartTurn(r.ctx, r.thread, "Say ready.", nil)
		require.NoError(r.t, err)
		_, err = r.client.WaitTurn(r.ctx, turnID)
		require.NoError(r.t, err)
		reqs := r.mock.Requests()
		for _, tool := range reqs[len(reqs)-1].Tools {
			if tool.Namespace == mcpNamespace {
				return
			}
		}
		require.True(r.t, time.Now().Before(deadline), "Codex never offered crw's tools")
	}
}

// turn runs one turn of the thread in which the model calls crw's tools, one after the other,
// and returns what Codex sent back for each.
func (r *codexRig) turn(calls ...mockmodel.OwnerStep) []string {
	r.t.Helper()
	for i := range calls {
		calls[i].Namespace = mcpNamespace
	}
	r.script = append(r.script, calls...)
	r.mock.Own(r.thread, append(append([]mockmodel.OwnerStep(nil), r.script...), mockmodel.OwnerStep{Text: "Done."})...)
	turnID, err := r.client.StartTurn(r.ctx, r.thread, "Drive the crw run.", nil)
	require.NoError(r.t, err)
	res, err := r.client.WaitTurn(r.ctx, turnID)
	require.NoError(r.t, err)
	require.Equal(r.t, codex.TurnCompleted, res.Turn.Status, "%+v", res.Turn.Error)
	reqs := r.mock.Requests()
	outputs := reqs[len(reqs)-1].Outputs
	var got []string
	for i := len(r.outputs); i < len(r.script); i++ {
		out, ok := outputs[fmt.Sprintf("call_owner_%d", i)]
		require.True(r.t, ok, "no output of call %d (%s): %v", i, r.script[i].Tool, outputs)
		got = append(got, out)
	}
	r.outputs = append(r.outputs, got...)
	return got
}

// answer is the tool's answer in what Codex sent back: the JSON after "Output:".
func answer(t *testing.T, output string) map[string]any {
	t.Helper()
	_, js, ok := strings.Cut(output, "Output:\n")
	require.True(t, ok, output)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(js), &m), output)
	return m
}

func (r *codexRig) status(run string) *store.Status {
	r.t.Helper()
	st, err := local.New(r.state)
	require.NoError(r.t, err)
	s, err := (&engine.Service{Store: st}).Status(r.ctx, run)
	require.NoError(r.t, err)
	return s
}

// waitStatus waits until the run's journal says how it stopped, or it ended.
func (r *codexRig) waitStatus(run string, done func(*store.Status) bool) *store.Status {
	r.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if st := r.status(run); done(st) {
			return st
		}
		require.True(r.t, time.Now().Before(deadline), "run %s: %+v", run, r.status(run))
	}
}

// TestMCPUnderTheRealCodex: Codex 0.169.0 runs crw mcp from its config.toml, and its model
// calls crw's tools: it starts a workflow (fake backend, paused by a rate limit), finds it
// paused, inspects it, resumes it once the limit has passed, and reads its result; a call
// with a malformed run id comes back a tool error with its code.
func TestMCPUnderTheRealCodex(t *testing.T) {
	t.Parallel()
	r := newCodexRig(t, stdioServer)
	repo := enginetest.GitRepo(t, map[string]string{"README.md": "# the project\n"})
	answers := filepath.Join(t.TempDir(), "answers.json")
	require.NoError(t, os.WriteFile(answers, mcptest.RateLimited(t), 0o600))
	wf := filepath.Join(mcptest.Repo(t), "workflows", "plan-build-review.js")

	out := r.turn(mockmodel.OwnerStep{Tool: "start", Args: map[string]any{"request_key": "codex-start", "workflow": wf,
		"input": map[string]any{"task": "Add a --verbose flag"}, "backend": "fake", "answers": answers, "repo": repo}})
	// The tools the model was offered: all of crw's, in their namespace. Codex does not hold
	// a turn back for its MCP servers' start: on a loaded machine the turn's first request may
	// come before crw's tools are listed, and a later one of the turn has them.
	offered := map[string]bool{}
	for _, req := range r.mock.Requests() {
		for _, tool := range req.Tools {
			if tool.Namespace == mcpNamespace {
				offered[tool.Name] = true
				assert.Contains(t, tool.Description, "safe_response", tool.Name)
			}
		}
	}
	for _, name := range mcptest.Tools {
		assert.True(t, offered[name], "Codex offers %s__%s", mcpNamespace, name)
	}
	started := answer(t, out[0])
	require.Nil(t, started["error"], out[0])
	run := started["run"].(map[string]any)["run"].(string)
	paused := r.waitStatus(run, func(st *store.Status) bool { return st.Status != "" })
	require.Equal(t, store.RunPaused, paused.Status)

	out = r.turn(mockmodel.OwnerStep{Tool: "status", Args: map[string]any{"run": run}},
		mockmodel.OwnerStep{Tool: "inspect", Args: map[string]any{"run": run}},
		mockmodel.OwnerStep{Tool: "status", Args: map[string]any{"run": "not-a-run"}})
	st := answer(t, out[0])["status"].(map[string]any)
	assert.Equal(t, "paused", st["state"])
	assert.Equal(t, "host_infra_rate", st["result"].(map[string]any)["reason"])
	in := answer(t, out[1])["inspection"].(map[string]any)
	assert.Equal(t, "fake", in["backend"].(map[string]any)["name"])
	assert.Contains(t, fmt.Sprint(in["next"]), "crw flow resume "+run)
	t.Logf("a tool error as Codex sends it back: %s", out[2])
	assert.Contains(t, out[2], `"code":"invalid_request"`, "a tool error reaches the model with its code")
	assert.Contains(t, out[2], `"safe_response"`)

	// The limit has passed: other answers let every call through.
	through := filepath.Join(t.TempDir(), "through.json")
	require.NoError(t, os.WriteFile(through, []byte(`{"answers": []}`), 0o600))
	out = r.turn(mockmodel.OwnerStep{Tool: "resume", Args: map[string]any{"request_key": "codex-resume", "run": run, "answers": through}})
	assert.Equal(t, run, answer(t, out[0])["run"].(map[string]any)["run"], out[0])
	r.waitStatus(run, func(st *store.Status) bool { return st.State == store.StateEnded })

	out = r.turn(mockmodel.OwnerStep{Tool: "status", Args: map[string]any{"run": run}},
		mockmodel.OwnerStep{Tool: "resume", Args: map[string]any{"request_key": "codex-resume", "run": run, "answers": through}})
	st = answer(t, out[0])["status"].(map[string]any)
	assert.Equal(t, "completed", st["status"], out[0])
	assert.Equal(t, "approved", st["result"].(map[string]any)["outcome"])
	assert.Equal(t, answer(t, r.outputs[4]), answer(t, out[1]), "the resume's key answers its first result again")

	// What crw's state shows: one run, paused and resumed to its end, by the MCP client Codex is.
	st2, err := local.New(r.state)
	require.NoError(t, err)
	ids, err := st2.List(r.ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{run}, ids)
	var rows []journal.Row
	require.NoError(t, st2.Rows(r.ctx, run, 1, func(row *journal.Row) error { rows = append(rows, *row); return nil }))
	assert.Len(t, enginetest.OfType(rows, journal.TypeStarted), 2)
	assert.Len(t, enginetest.OfType(rows, journal.TypeEscalation), 1)
	audit, err := (&engine.Service{Store: st2}).AuditLog(r.ctx, run, 10)
	require.NoError(t, err)
	require.Len(t, audit, 2)
	for i, op := range []string{"start", "resume"} {
		assert.Equal(t, op, audit[i].Op)
		assert.Equal(t, "ok", audit[i].Result)
		assert.True(t, strings.HasPrefix(audit[i].Who, "mcp client "), audit[i].Who)
	}
	t.Logf("Codex introduces itself to crw mcp as %q", audit[0].Who)
}

// TestMCPOverHTTPUnderTheRealCodex: Codex reaches crw mcp --listen at its url with the bearer
// token an environment variable holds (bearer_token_env_var), and its model's calls are served.
func TestMCPOverHTTPUnderTheRealCodex(t *testing.T) {
	const token = "codex-http-token-0123456789"
	t.Setenv("CRW_E2E_MCP_TOKEN", token) // the app server's, for bearer_token_env_var
	var url string
	r := newCodexRig(t, func(t *testing.T, state string) string {
		cmd := mcpCommand(t, state, "--listen", "127.0.0.1:0")
		cmd.Env = append(cmd.Env, "CRW_MCP_TOKEN="+token)
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
		line, err := bufio.NewReader(stderr).ReadString('\n')
		require.NoError(t, err)
		url = strings.TrimPrefix(strings.TrimSpace(line), "crw mcp: serving on ")
		return fmt.Sprintf(`
[mcp_servers.crw]
url = %q
bearer_token_env_var = "CRW_E2E_MCP_TOKEN"
default_tools_approval_mode = "approve"
`, url)
	})
	out := r.turn(mockmodel.OwnerStep{Tool: "effects", Args: map[string]any{}},
		mockmodel.OwnerStep{Tool: "status", Args: map[string]any{"run": "20260101-000000-abcdef"}})
	assert.Equal(t, map[string]any{"effects": []any{}, "error": nil}, answer(t, out[0]))
	assert.Equal(t, "invalid_request", answer(t, out[1])["error"].(map[string]any)["code"], out[1])
	t.Logf("served at %s", url)
}
