package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/mcptest"
)

// tsClient is a client of the official TypeScript SDK (@modelcontextprotocol/sdk): over stdio
// (crw mcp --state STATE) or over HTTP (URL, TOKEN), it lists the tools, starts a fake run of
// WORKFLOW, lists the runs, asks the status of a run that does not exist, and prints one JSON
// line of what it got. The SDK checks each tool's structured answer against its output schema.
const tsClient = `
const [sdk, mode, a, b, workflow] = process.argv.slice(2);
const { Client } = await import(sdk + "/dist/esm/client/index.js");
const client = new Client({ name: "ts-sdk-test", version: "1.0.0" });
let transport;
if (mode === "stdio") {
  const { StdioClientTransport } = await import(sdk + "/dist/esm/client/stdio.js");
  transport = new StdioClientTransport({ command: "crw", args: ["mcp", "--state", a], env: { ...process.env, CODEX_THREAD_ID: "" }, stderr: "inherit" });
} else {
  const { StreamableHTTPClientTransport } = await import(sdk + "/dist/esm/client/streamableHttp.js");
  transport = new StreamableHTTPClientTransport(new URL(a), { requestInit: { headers: { Authorization: "Bearer " + b } } });
}
await client.connect(transport);
const tools = (await client.listTools()).tools.map((t) => t.name).sort();
const started = await client.callTool({ name: "start", arguments: { request_key: "ts-" + mode, workflow, backend: "fake", no_repo: true } });
const listed = await client.callTool({ name: "list", arguments: {} });
const missing = await client.callTool({ name: "status", arguments: { run: "20260101-000000-abcdef" } });
console.log(JSON.stringify({
  server: client.getServerVersion().name, tools,
  started: started.isError ? started.content : started.structuredContent.run.run,
  listed: listed.structuredContent.page.runs.map((r) => r.run),
  missing: { isError: missing.isError, code: missing.structuredContent.error.code },
}));
await client.close();
`

// TestMCPWithTheTypeScriptSDK: the official TypeScript SDK's client speaks to crw mcp over
// stdio and over HTTP: it sees every tool, starts a run and lists it, and gets a missing run's
// error with its code; every structured answer passes the SDK's check against its tool's
// output schema. It needs node and the SDK ($CRW_MCP_SDK, which .ci/install-mcp-sdk.sh
// prints; CI sets it).
func TestMCPWithTheTypeScriptSDK(t *testing.T) {
	t.Parallel()
	sdk := os.Getenv("CRW_MCP_SDK")
	if sdk == "" {
		t.Skip("$CRW_MCP_SDK is not set: bash .ci/install-mcp-sdk.sh installs the TypeScript SDK and prints its folder")
	}
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node runs the TypeScript SDK's client")
	dir := t.TempDir()
	script := filepath.Join(dir, "client.mjs")
	require.NoError(t, os.WriteFile(script, []byte(tsClient), 0o644))
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() { return (await agent.call({ role: "explorer", prompt: "look" })).status; }
`), 0o644))
	type got struct {
		Server  string
		Tools   []string
		Started json.RawMessage
		Listed  []string
		Missing struct {
			IsError bool
			Code    string
		}
	}
	run := func(args ...string) got {
		t.Helper()
		cmd := exec.Command(node, append([]string{script, "file://" + sdk}, args...)...)
		cmd.Dir = dir
		out, err := cmd.Output()
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		require.NoError(t, err, "node client: %s%s", out, stderr)
		var g got
		require.NoError(t, json.Unmarshal(out, &g), "%s", out)
		return g
	}
	check := func(mode string, g got) {
		t.Helper()
		assert.Equal(t, "crw", g.Server, mode)
		assert.Equal(t, mcptest.Tools, g.Tools, mode)
		var run string
		require.NoError(t, json.Unmarshal(g.Started, &run), "%s: start answered %s", mode, g.Started)
		assert.Equal(t, []string{run}, g.Listed, mode)
		assert.True(t, g.Missing.IsError, mode)
		assert.Equal(t, "invalid_request", g.Missing.Code, mode)
	}

	check("stdio", run("stdio", filepath.Join(dir, "stdio-state"), "", wf))

	const token = "ts-sdk-test-token-0123456789"
	cmd := mcpCommand(t, filepath.Join(dir, "http-state"), "--listen", "127.0.0.1:0")
	cmd.Env = append(cmd.Env, "CRW_MCP_TOKEN="+token, "CODEX_THREAD_ID=")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stderr).ReadString('\n')
	require.NoError(t, err)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "crw mcp: serving on ")
	require.True(t, ok, line)
	check("http", run("http", url, token, wf))
}
