package mcpserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver"
	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/mcptest"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// TestHostileArgumentsEndInAToolError: huge, deep, mistyped and malformed arguments to every
// tool end in a clear tool error, and the server goes on serving.
func TestHostileArgumentsEndInAToolError(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	deep := strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000)
	cases := map[string]string{
		"array":          `[1, 2, 3]`,
		"string":         `"run"`,
		"number":         `12`,
		"deep":           `{"run": ` + deep + `}`,
		"deep input":     `{"request_key": "k", "workflow": "wf.js", "input": ` + deep + `}`,
		"huge number":    `{"request_key": "k", "workflow": "wf.js", "pool": 1e400, "limit": 1e400, "run": "x"}`,
		"negative":       `{"request_key": "k", "run": "20260101-000000-abcdef", "wait_seconds": -1, "limit": -5}`,
		"lone surrogate": `{"request_key": "k", "workflow": "wf.js", "input": "\ud800", "run": "\ud800"}`,
		"nul":            `{"request_key": "k\u0000", "run": "r\u0000", "script": "\u0000"}`,
		"repeated":       `{"run": "a", "run": "b"}`,
	}
	// The large ones cost time: a few tools of each kind take them.
	large := map[string]string{
		"huge string":  `{"run": "` + strings.Repeat("x", 1<<20) + `", "workflow": "` + strings.Repeat("w", 256<<10) + `"}`,
		"huge key":     `{"request_key": "` + strings.Repeat("k", 100_000) + `", "run": "20260101-000000-abcdef", "call": "c1", "verdict": "applied"}`,
		"many members": manyMembers(20000),
	}
	for _, tool := range mcptest.Tools {
		for name, args := range cases {
			a := r.Call(r.ctx, tool, json.RawMessage(args))
			if a.IsError {
				assert.NotEmpty(t, a.Code(), "%s %s", tool, name)
				assert.LessOrEqual(t, len(a.Get("error.detail").(string)), 1100, "%s %s: a bounded detail", tool, name)
				continue
			}
			// Only the reads that take every member as optional may answer.
			assert.Contains(t, []string{"effects", "audit"}, tool, "%s %s answered: %s", tool, name, a.Text)
		}
	}
	for _, tool := range []string{"start", "status", "recover"} {
		for name, args := range large {
			a := r.Call(r.ctx, tool, json.RawMessage(args))
			require.True(t, a.IsError, "%s %s", tool, name)
			assert.Equal(t, "invalid_request", a.Code(), "%s %s", tool, name)
			assert.LessOrEqual(t, len(a.Get("error.detail").(string)), 1100, "%s %s: a bounded detail", tool, name)
		}
	}
	// JSON Schema's integer takes 1.0: the answer says the number must be written whole.
	a := r.Call(r.ctx, "start", json.RawMessage(`{"request_key": "k", "workflow": "wf.js", "max_log_mib": 1.0}`))
	require.True(t, a.IsError)
	assert.Equal(t, "invalid_request", a.Code())
	assert.Contains(t, a.Get("error.detail"), "max_log_mib must be written as a whole number, without a fraction (got number 1.0)")
	assert.False(t, r.Call(r.ctx, "audit", map[string]any{}).IsError, "still serving")
}

func manyMembers(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, `"m%d": %d,`, i, i)
	}
	b.WriteString(`"run": "x"}`)
	return b.String()
}

// TestARequestWhoseServerDiedIsUnknown: a key whose first request never recorded how it ended
// (its server died under it) answers run_unavailable, request_outcome_unknown, uncertain: the
// request is not done again, and other arguments under the key are still a conflict.
func TestARequestWhoseServerDiedIsUnknown(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	st, err := local.New(r.state)
	require.NoError(t, err)
	in := &mcpserver.ResumeIn{}
	require.NoError(t, json.Unmarshal([]byte(`{"request_key": "died", "run": "20260101-000000-abcdef"}`), in))
	sum := sha256.Sum256([]byte("died"))
	rec, _ := json.Marshal(map[string]any{"at": time.Now(), "tool": "resume", "digest": mcpserver.Digest("resume", in)})
	require.NoError(t, st.Records("", store.KindIdempotency).Put(context.Background(), "mcp-"+hex.EncodeToString(sum[:]), rec))

	a := r.Call(r.ctx, "resume", map[string]any{"request_key": "died", "run": "20260101-000000-abcdef"})
	require.True(t, a.IsError)
	assert.Equal(t, "run_unavailable", a.Code())
	assert.Equal(t, "request_outcome_unknown", a.Get("error.diagnostic.reason"))
	assert.Equal(t, "uncertain", a.Get("error.diagnostic.certainty"))
	assert.Equal(t, "unknown", a.Get("error.diagnostic.disposition"))
	assert.NotEmpty(t, a.Get("error.diagnostic.nextAction"))

	other := r.Call(r.ctx, "resume", map[string]any{"request_key": "died", "run": "20260101-000000-fedcba"})
	assert.Equal(t, "idempotency_conflict", other.Code())
}

// TestStdioAnswersWhatItReadBeforeItsInputEnds: requests written all at once, the input then
// closed: every one is answered before the session ends.
func TestStdioAnswersWhatItReadBeforeItsInputEnds(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	var in strings.Builder
	in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	const n = 20
	for i := range n {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":"s%d","method":"tools/call","params":{"name":"effects","arguments":{}}}`+"\n", i)
	}
	out := &strings.Builder{}
	ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
	defer cancel()
	err := r.srv.MCP().Run(ctx, r.srv.Stdio(ctx, io.NopCloser(strings.NewReader(in.String())), out))
	require.NoError(t, err, "the end of the input ends the session cleanly")
	answered := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID     any             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		answered[fmt.Sprint(m.ID)] = m.Result != nil
	}
	for i := range n {
		assert.True(t, answered[fmt.Sprintf("s%d", i)], "request s%d answered", i)
	}
}

// TestStdioAnswersWhatTheSDKWouldEndOn: a line that is not JSON, one longer than 16 MiB, a tool
// call and a request nested deeper than the SDK takes: each is answered with an error, and the
// session goes on to answer the next request.
func TestStdioAnswersWhatTheSDKWouldEndOn(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	deep := strings.Repeat("[", 1500) + strings.Repeat("]", 1500)
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`garbage {`,
		`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"status","arguments":{"run":"` + strings.Repeat("x", 17<<20) + `"}}}`,
		`{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"start","arguments":{"request_key":"k","workflow":"wf.js","input":` + deep + `}}}`,
		`{"jsonrpc":"2.0","id":"deep-ping","method":"ping","params":{"x":` + deep + `}}`,
		`{"jsonrpc":"2.0","id":"ok","method":"tools/call","params":{"name":"status","arguments":{"run":"nope"}}}`,
	}
	out := &strings.Builder{}
	err := r.srv.MCP().Run(r.ctx, r.srv.Stdio(r.ctx, strings.NewReader(strings.Join(lines, "\n")), out))
	require.NoError(t, err)
	got := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		id := fmt.Sprint(m["id"])
		if m["id"] == nil {
			id = fmt.Sprintf("null-%d", len(got))
		}
		got[id] = m
	}
	var nulls []float64
	for id, m := range got {
		if strings.HasPrefix(id, "null-") {
			nulls = append(nulls, m["error"].(map[string]any)["code"].(float64))
		}
	}
	assert.ElementsMatch(t, []float64{-32700, -32600}, nulls, "not JSON; too long")
	deepRes := got["deep"]["result"].(map[string]any)
	assert.Equal(t, true, deepRes["isError"])
	assert.Equal(t, "invalid_request", deepRes["structuredContent"].(map[string]any)["error"].(map[string]any)["code"])
	assert.Contains(t, deepRes["structuredContent"], "run", "start's envelope")
	assert.Equal(t, -32600.0, got["deep-ping"]["error"].(map[string]any)["code"])
	okRes := got["ok"]["result"].(map[string]any)
	assert.Equal(t, "invalid_request", okRes["structuredContent"].(map[string]any)["error"].(map[string]any)["code"], "served on")
}
