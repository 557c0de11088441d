package mcpserver_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/mcptest"
)

// FuzzToolArguments: whatever a tool call's arguments are, the server answers it (a result
// or an error), never panics, and goes on serving.
func FuzzToolArguments(f *testing.F) {
	r := newRigOn(f, filepath.Join(f.TempDir(), "state"), "fuzz")
	for i, seed := range []string{`{}`, `{"run": "20260101-000000-abcdef"}`, `{"request_key": "k", "run": "x", "call": "c1", "verdict": "applied", "output": [1]}`,
		`{"workflow": "wf.js", "input": {"a": [null, true, 1e999]}, "pool": -1}`, `[{"run": 1}]`, `{"limit": 3.5}`, `"\ud800"`} {
		f.Add(uint8(i), []byte(seed))
	}
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		if !json.Valid(args) {
			return // the client cannot send it; TestStdioAnswersWhatTheSDKWouldEndOn sends such lines
		}
		name := mcptest.Tools[int(which)%len(mcptest.Tools)]
		res, err := r.Session.CallTool(r.ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s %s: %v", name, args, err)
		}
		if res.StructuredContent == nil {
			t.Fatalf("%s %s: no structured content", name, args)
		}
	})
}
