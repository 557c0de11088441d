package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/mcptest"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local"
)

// TestToolsAndTheirSchemas: the seventeen tools, each documented, each output schema strict
// under crw's own check and each input schema one crw's compiler and jsonschema-go take.
func TestToolsAndTheirSchemas(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	assert.Equal(t, mcptest.Tools, r.Listed)
	r.CheckSchemas()
	for _, name := range r.Listed {
		tool := r.Tools[name]
		assert.Contains(t, tool.Description, "safe_response", "%s documents its failures", name)
		in, _ := json.Marshal(tool.InputSchema)
		mutation := strings.Contains(string(in), `"request_key"`)
		assert.Equal(t, contains(mcptest.Mutations, name), mutation, "%s takes a request_key exactly when it mutates", name)
		if mutation {
			assert.Contains(t, tool.Description, "idempotency_conflict", name)
			assert.False(t, tool.Annotations.ReadOnlyHint, name)
		} else {
			assert.True(t, tool.Annotations.ReadOnlyHint, name)
		}
	}
}

// TestStartTakesEveryBackendOption: each option a backend of the build registers is a member
// of start's input, so an agent can give what crw flow start's flags give.
func TestStartTakesEveryBackendOption(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	in, _ := json.Marshal(r.Tools["start"].InputSchema)
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(in, &s))
	for _, o := range backends().Options() {
		assert.Contains(t, s.Properties, strings.ReplaceAll(o.Name, "-", "_"), "--%s", o.Name)
	}
	assert.Contains(t, string(s.Properties["backend"]), `"enum"`)
}

// TestAPausedRunResumedThroughTheTools: start a fake run that a rate limit pauses, find it
// paused, inspect it, resume it once its answers let it through, read its result; the journal
// holds both processes' starts, and the audit both mutations, by the MCP client.
func TestAPausedRunResumedThroughTheTools(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	repo := enginetest.GitRepo(t, map[string]string{"README.md": "# the project\n"})
	run := r.PauseAndResume(r.ctx, t.TempDir(), repo)

	rows := journalRows(t, r.state, run)
	assert.Len(t, enginetest.OfType(rows, journal.TypeStarted), 2, "started, then resumed")
	assert.Len(t, enginetest.OfType(rows, journal.TypeEscalation), 1, "the rate limit")
	ends := enginetest.OfType(rows, journal.TypeEnded)
	require.Len(t, ends, 2, "the pause, then the end")
	assert.Equal(t, "paused", ends[0].Status)
	assert.Equal(t, "completed", ends[1].Status)

	// A run is named as the command line names it: last, or a prefix of its id or random part.
	for _, ref := range []string{"last", run[:13], run[strings.LastIndexByte(run, '-')+1:]} {
		st := r.Call(r.ctx, "status", map[string]any{"run": ref})
		assert.Equal(t, run, st.Get("status.run"), ref)
	}

	audit := r.Call(r.ctx, "audit", map[string]any{"run": run})
	require.False(t, audit.IsError, audit.Text)
	entries := audit.Get("audit").([]any)
	require.Len(t, entries, 2, audit.Text)
	for i, op := range []string{"start", "resume"} {
		e := entries[i].(map[string]any)
		assert.Equal(t, op, e["op"])
		assert.Equal(t, "ok", e["result"])
		assert.Equal(t, "mcp client crw-test", e["who"])
	}
}

// TestARequestKeyDoesItOnce: the same key and arguments answer the first result again, also
// from a server started anew on the state folder, and start no second run; the same key with
// other arguments is idempotency_conflict; a first request refused invalid_request keeps no key.
func TestARequestKeyDoesItOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	wf := writeWorkflow(t, `export default async function main(input) { return input; }`)
	args := map[string]any{"request_key": "k1", "workflow": wf, "backend": "fake", "no_repo": true, "input": json.RawMessage(`{"n": 12345678901234567890}`)}
	first := r.Call(r.ctx, "start", args)
	require.False(t, first.IsError, first.Text)
	again := r.Call(r.ctx, "start", args)
	assert.Equal(t, first.Content, again.Content, "the first result, again")
	assert.Equal(t, 1, runCount(t, r.state))

	other := map[string]any{"request_key": "k1", "workflow": wf, "backend": "fake", "no_repo": true, "input": json.RawMessage(`{"n": 12345678901234567891}`)}
	conflict := r.Call(r.ctx, "start", other)
	require.True(t, conflict.IsError)
	assert.Equal(t, "idempotency_conflict", conflict.Code())
	assert.Equal(t, errs.IdempotencyConflict.Message(), conflict.Get("error.message"))
	assert.Equal(t, errs.IdempotencyConflict.SafeResponse(), conflict.Get("error.safe_response"))
	assert.Nil(t, conflict.Get("run"))
	assert.Equal(t, 1, runCount(t, r.state))

	// Another tool under the key is other input too.
	cancel := r.Call(r.ctx, "cancel", map[string]any{"request_key": "k1", "run": first.Get("run.run")})
	assert.Equal(t, "idempotency_conflict", cancel.Code())

	restarted := newRigOn(t, r.state, "crw-test")
	assert.Equal(t, first.Content, restarted.Call(r.ctx, "start", args).Content, "the key outlives the server")
	assert.Equal(t, 1, runCount(t, r.state))

	bad := r.Call(r.ctx, "start", map[string]any{"request_key": "k2", "workflow": filepath.Join(t.TempDir(), "absent.js"), "backend": "fake"})
	assert.Equal(t, "invalid_request", bad.Code())
	good := r.Call(r.ctx, "start", map[string]any{"request_key": "k2", "workflow": wf, "backend": "fake", "no_repo": true})
	require.False(t, good.IsError, "a refused request keeps no key: %s", good.Text)
	assert.Equal(t, 2, runCount(t, r.state))

	// The audit has each mutation once: the replays did nothing, the conflicts were refused.
	audit := r.Call(r.ctx, "audit", map[string]any{})
	var results []string
	for _, e := range audit.Get("audit").([]any) {
		m := e.(map[string]any)
		results = append(results, m["op"].(string)+" "+m["result"].(string))
	}
	assert.Equal(t, []string{"start ok", "start idempotency_conflict", "cancel idempotency_conflict", "start invalid_request", "start ok"}, results)
}

// TestConcurrentRequestsWithOneKey: requests with one key at once, from two servers on the
// state folder, start one run and all answer it.
func TestConcurrentRequestsWithOneKey(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	other := newRigOn(t, r.state, "crw-other")
	wf := writeWorkflow(t, `export default async function main() { return 1; }`)
	args := map[string]any{"request_key": "same", "workflow": wf, "backend": "fake", "no_repo": true}
	const n = 6
	runs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		c := r.Client
		if i%2 == 1 {
			c = other.Client
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := c.Call(r.ctx, "start", args)
			if !a.IsError {
				runs[i], _ = a.Get("run.run").(string)
			}
		}()
	}
	wg.Wait()
	for i := range n {
		assert.Equal(t, runs[0], runs[i])
	}
	assert.NotEmpty(t, runs[0])
	assert.Equal(t, 1, runCount(t, r.state))
}

// TestErrorsCarryTheContract: a malformed run id, arguments the schema refuses, an unknown
// member, a run that does not exist: each a tool error with its code, fixed message, safe
// response and detail, never the Go error's text alone.
func TestErrorsCarryTheContract(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	tests := []struct {
		name, tool string
		args       any
		code       errs.Code
		detail     string
	}{
		{"unknown run", "status", map[string]any{"run": "no-such-run"}, errs.InvalidRequest, "no run no-such-run in the state folder"},
		{"not a run id", "status", map[string]any{"run": "../x"}, errs.InvalidRequest, `"../x" is not a run id`},
		{"run that does not exist", "inspect", map[string]any{"run": "20260101-000000-abcdef"}, errs.InvalidRequest, "no run 20260101-000000-abcdef in the state folder"},
		{"prefix of no run", "status", map[string]any{"run": "2026"}, errs.InvalidRequest, "no run 2026 in the state folder"},
		{"last of no run", "audit", map[string]any{"run": "last"}, errs.InvalidRequest, "there is no run in the state folder"},
		{"missing member", "status", map[string]any{}, errs.InvalidRequest, "input schema"},
		{"unknown member", "status", map[string]any{"run": "x", "extra": 1}, errs.InvalidRequest, "input schema"},
		{"wrong type", "effects", map[string]any{"limit": "ten"}, errs.InvalidRequest, "arguments do not match the tool's input schema: /limit: must be null or an integer, got a string"},
		{"a fraction", "audit", map[string]any{"limit": 1.5}, errs.InvalidRequest, "/limit: must be null or an integer, got a number"},
		{"out of bounds", "effects", map[string]any{"limit": 0}, errs.InvalidRequest, "/limit: must be at least 1"},
		{"verdict not listed", "recover", map[string]any{"request_key": "r", "run": "20260101-000000-abcdef", "call": "c1", "verdict": "maybe"}, errs.InvalidRequest, "input schema"},
		{"no request key", "cancel", map[string]any{"run": "20260101-000000-abcdef"}, errs.InvalidRequest, "input schema"},
		{"empty request key", "cancel", map[string]any{"request_key": "", "run": "20260101-000000-abcdef"}, errs.InvalidRequest, "request_key"},
		{"a bad duration", "start", map[string]any{"request_key": "d", "workflow": "x.js", "deadline": "soon"}, errs.InvalidRequest, "deadline"},
		{"shadow without a record", "shadow", map[string]any{"script": "x.js"}, errs.InvalidRequest, "exactly one of"},
		{"next of no run", "next", map[string]any{"run": "../x"}, errs.InvalidRequest, "not a run id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := r.Call(r.ctx, tt.tool, tt.args)
			require.True(t, a.IsError, a.Text)
			assert.Equal(t, string(tt.code), a.Code(), a.Text)
			assert.Equal(t, tt.code.Message(), a.Get("error.message"))
			assert.Equal(t, tt.code.SafeResponse(), a.Get("error.safe_response"))
			assert.Contains(t, a.Get("error.detail"), tt.detail)
			assert.Contains(t, a.Content, payloads[tt.tool], "the envelope's member is there, null")
		})
	}
}

var payloads = map[string]string{"start": "run", "status": "status", "next": "next", "dispatched": "reply", "answer": "answer",
	"cancel": "status", "resume": "run", "inspect": "inspection", "effects": "effects", "audit": "audit", "recover": "reconciled", "shadow": "report",
	"list": "page", "show": "timeline", "logs": "logs", "trace": "trace", "capabilities": "capabilities"}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func writeWorkflow(t *testing.T, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	return path
}

func runCount(t *testing.T, state string) int {
	t.Helper()
	st, err := local.New(state)
	require.NoError(t, err)
	ids, err := st.List(context.Background())
	require.NoError(t, err)
	return len(ids)
}

func journalRows(t *testing.T, state, run string) []journal.Row {
	t.Helper()
	st, err := local.New(state)
	require.NoError(t, err)
	var rows []journal.Row
	require.NoError(t, st.Rows(context.Background(), run, 1, func(r *journal.Row) error {
		rows = append(rows, *r)
		return nil
	}))
	return rows
}
