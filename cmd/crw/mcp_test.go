package main

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/mcptest"
	"github.com/crw-dev/crw/internal/enginetest"
)

// mcpCommand is `crw mcp ARGS` on a state folder of its own, in a folder that is no git checkout.
func mcpCommand(t *testing.T, state string, args ...string) *exec.Cmd {
	cmd := exec.Command("crw", append([]string{"mcp", "--state", state}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	return cmd
}

// TestMCPOverStdio: a real crw mcp process under the SDK's client: its tools and schemas, a
// fake run paused by a rate limit, found paused, inspected, resumed and read to its result;
// the end of its input ends it with exit status 0.
func TestMCPOverStdio(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	state := filepath.Join(t.TempDir(), "state")
	cmd := mcpCommand(t, state)
	c := mcptest.Connect(t, ctx, "stdio-test", &mcp.CommandTransport{Command: cmd})
	assert.Equal(t, mcptest.Tools, c.Listed)
	c.CheckSchemas()
	repo := enginetest.GitRepo(t, map[string]string{"README.md": "# the project\n"})
	run := c.PauseAndResume(ctx, t.TempDir(), repo)
	assert.DirExists(t, filepath.Join(state, "flow", run))

	require.NoError(t, c.Session.Close(), "closing its input ends it cleanly")
	require.NotNil(t, cmd.ProcessState)
	assert.Equal(t, 0, cmd.ProcessState.ExitCode())
}

// TestMCPStdioGoesOnPastBadLines: a line that is not JSON is answered with a parse error and
// the requests after it are answered; the end of the input is exit status 0.
func TestMCPStdioGoesOnPastBadLines(t *testing.T) {
	t.Parallel()
	cmd := mcpCommand(t, filepath.Join(t.TempDir(), "state"))
	cmd.Stdin = strings.NewReader("garbage\n" + `{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n")
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 2, "%s", out)
	assert.Contains(t, lines[0], `"code":-32700`)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":7,"result":{}}`, lines[1])
}

// TestMCPCommandLine: what crw mcp refuses before it serves, with exit status 2.
func TestMCPCommandLine(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "state")
	token := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(token, []byte("a-token-of-enough-bytes\n"), 0o600))
	short := filepath.Join(t.TempDir(), "short")
	require.NoError(t, os.WriteFile(short, []byte("short"), 0o600))
	for _, tt := range []struct {
		args []string
		env  []string
		says string
	}{
		{[]string{"--listen", "0.0.0.0:0", "--token-file", token}, nil, "not a loopback address; give --allow-remote"},
		{[]string{"--listen", ":0", "--token-file", token}, nil, "--allow-remote"},
		{[]string{"--listen", "127.0.0.1:0"}, []string{"CRW_MCP_TOKEN="}, "needs a bearer token"},
		{[]string{"--listen", "127.0.0.1:0", "--token-file", short}, nil, "at least 16"},
		{[]string{"--listen", "127.0.0.1:0", "--token-file", filepath.Join(t.TempDir(), "absent")}, nil, "cannot read"},
		{[]string{"--token-file", token}, nil, "go with --listen"},
		{[]string{"--allow-remote"}, nil, "go with --listen"},
		{[]string{"--max-sessions", "3"}, nil, "go with --listen"},
		{[]string{"--listen", "127.0.0.1:0", "--token-file", token, "--max-connections", "0"}, nil, "must be 1 or more"},
		{[]string{"--listen", "127.0.0.1:0", "--token-file", token, "--session-idle", "10ms"}, nil, "--session-idle 1s or more"},
	} {
		res := durableCrw(t, state, tt.env, append([]string{"mcp", "--state", state}, tt.args...)...)
		assert.Equal(t, 2, res.exit, "%v: %s", tt.args, res.stderr)
		assert.Contains(t, res.stderr, "crw: invalid_request", tt.args)
		assert.Contains(t, res.stderr, tt.says, tt.args)
	}
}

// TestMCPOverHTTP: crw mcp --listen serves the SDK's client with the token, refuses a request
// without it 401, and ends with exit status 0 on SIGTERM.
func TestMCPOverHTTP(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const token = "http-test-token-0123456789"
	cmd := mcpCommand(t, filepath.Join(t.TempDir(), "state"), "--listen", "127.0.0.1:0")
	cmd.Env = append(cmd.Env, "CRW_MCP_TOKEN="+token)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill() })
	line, err := bufio.NewReader(stderr).ReadString('\n')
	require.NoError(t, err)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "crw mcp: serving on ")
	require.True(t, ok, line)

	res, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode)

	hc := &http.Client{Transport: bearer(token)}
	c := mcptest.Connect(t, ctx, "http-test", &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1})
	assert.Equal(t, mcptest.Tools, c.Listed)
	a := c.Call(ctx, "status", map[string]any{"run": "20260101-000000-abcdef"})
	assert.Equal(t, "invalid_request", a.Code(), a.Text)
	require.NoError(t, c.Session.Close())

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "a signal ends it cleanly")
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}
