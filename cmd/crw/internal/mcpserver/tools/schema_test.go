package tools

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/nextview"
	"github.com/crw-dev/crw/engine/diagnosis"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// TestStrictShapesWhatInferenceLeavesLoose: optional members become required and nullable,
// every object closed, nested ones too; what is already strict stays as it is.
func TestStrictShapesWhatInferenceLeavesLoose(t *testing.T) {
	t.Parallel()
	type inner struct {
		A string `json:"a,omitempty"`
	}
	type loose struct {
		Name  string          `json:"name,omitempty"`
		Count *int            `json:"count,omitempty"`
		Items []inner         `json:"items,omitempty"`
		Any   json.RawMessage `json:"any,omitempty"`
		Inner inner           `json:"inner"`
	}
	s := infer[loose]()
	before, _ := json.Marshal(s)
	vs, err := schema.CheckStrict(before)
	require.NoError(t, err)
	require.NotEmpty(t, vs, "inference leaves optional members out of required")

	strict(s)
	after, _ := json.Marshal(s)
	vs, err = schema.CheckStrict(after)
	require.NoError(t, err)
	assert.Empty(t, vs, "%s", after)
	v, err := schema.Compile(after)
	require.NoError(t, err)
	assert.NoError(t, v.Validate([]byte(`{"name": null, "count": null, "items": null, "any": {"x": [1]}, "inner": {"a": null}}`)))
	assert.Error(t, v.Validate([]byte(`{"name": "n", "count": 1, "items": [], "any": 1}`)), "inner is required")
	assert.Error(t, v.Validate([]byte(`{"name": "n", "count": 1, "items": [], "any": 1, "inner": {"a": "x"}, "more": 1}`)), "closed")

	again := infer[loose]()
	strict(again)
	strict(again)
	twice, _ := json.Marshal(again)
	assert.JSONEq(t, string(after), string(twice), "strict is idempotent")
}

// TestOutputsMatchTheCommandLine: what a tool answers carries every member the command line's
// --json prints of the same view, with the same value (a map as an object of every key, or as
// a list of name and value), so the two cannot drift apart.
func TestOutputsMatchTheCommandLine(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 5, 23, 1, 5, time.UTC)
	st := &store.Status{Run: "r1", State: store.StateEnded, Status: store.RunCompleted, Result: json.RawMessage(`{"x": [1, "two"]}`),
		Error: &journal.RunError{Message: "m", Code: "invalid_request"}, Calls: store.Counts{journal.StatusCompleted: 2, journal.StatusHeld: 1},
		InFlight: 1, Tokens: journal.Tokens{Input: 5, Total: 9}, Workflow: "/w.js", Backend: "fake", Started: at, Replaying: true,
		PID: 42, LastSeq: 7, Updated: at, Decisions: []journal.PendingDecision{{ID: "keep", Question: "keep it?"}}}
	in := &diagnosis.Inspection{Status: st, Held: []diagnosis.HeldNode{{Node: "n", Call: "c1"}}, InFlight: []string{"c2"},
		Effects:  []diagnosis.Effect{{Run: "r1", Call: "c1", Kind: "call", Node: "n", Thread: "th", Turns: []string{"t1"}, Verify: "v", Then: "w"}},
		Verdicts: []diagnosis.GivenVerdict{{Call: "c1", Verdict: "applied", By: "me", At: at, Output: json.RawMessage(`{"ok": true}`), OutputDigest: "sha256:x"}},
		Log:      "/l", Next: []string{"do"}, Backend: diagnosis.BackendState{Name: "session", Options: map[string]string{"owner": "o", "host": "h"}, Host: "h", Reachable: "reachable"}}
	view := nextview.NextView{Run: "r1", State: "waiting_session", Steps: []nextview.NextStep{{StepFile: bus.StepFile{Call: "c1", K: 1, Attempt: 1,
		Marker: "c1/t1-a1", Action: "spawn", Message: "m"}, HostCall: nextview.HostCall{Tool: "spawn_agent", Arguments: map[string]any{"message": "m", "fork_context": false}}, Then: "t"}},
		Slots: nextview.Slots{Limit: 6, Open: 1, Agents: []string{"a"}}, SpawnFormats: []nextview.SpawnFormat{{Role: "reviewer", AgentType: "reviewer", Call: "c"}},
		Hint: "h", ResumedPID: 3, Warnings: []string{"w"}, Decisions: []journal.PendingDecision{{ID: "d", Question: "q"}}}
	rep := &shadow.Report{Run: "r1", Backend: "fake", Script: "s.js", Recorded: 2, Matched: 1, Status: store.RunCompleted, Result: json.RawMessage(`1`),
		Divergences: []shadow.Divergence{{Position: 1, Call: "c1", Node: "n", Fields: []replay.FieldDiff{{Field: "prompt", Expected: "a", Actual: "b"}}, Diff: "d"}},
		Unmade:      []shadow.Call{{Position: 2, Call: "c2", Role: "r", Node: "n", Prompt: "p"}}, New: []shadow.Call{}}
	preview := &ops.Preview{SpawnFormats: view.SpawnFormats, Facts: []ops.Fact{{Name: "f", OK: true, Detail: "d"}}, Next: "n"}
	for name, pair := range map[string][2]any{
		"status":     {st, statusOf(st)},
		"inspect":    {in, inspectionOf(in)},
		"next":       {view, nextOf(view)},
		"reply":      {bus.Reply{Reply: "bound", Marker: "m", Agent: "a", Detail: "d"}, Reply{Reply: "bound", Marker: "m", Agent: "a", Detail: "d"}},
		"audit":      {[]engine.AuditEntry{{At: at, Op: "start", Run: "r1", Who: "w", Result: "ok"}}, auditOf([]engine.AuditEntry{{At: at, Op: "start", Run: "r1", Who: "w", Result: "ok"}})},
		"shadow":     {rep, reportOf(rep)},
		"start":      {map[string]any{"run": "r1", "pid": 3, "state": "running", "warnings": []string{"w"}, "preview": preview}, startedOf("r1", 3, []string{"w"}, preview)},
		"reconciled": {engine.Reconciled{Run: "r", Call: "c", Verdict: "applied", Node: "n", HeldBy: []string{"c2"}, Journaled: true, PID: 9}, &Reconciled{Run: "r", Call: "c", Verdict: "applied", Node: "n", HeldBy: []string{"c2"}, Journaled: true, PID: 9}},
	} {
		var want, got any
		data, _ := json.Marshal(pair[0])
		require.NoError(t, json.Unmarshal(data, &want))
		data, _ = json.Marshal(pair[1])
		require.NoError(t, json.Unmarshal(data, &got))
		covers(t, name, want, got)
	}
}

// covers requires got to hold every member of want with the same value.
func covers(t *testing.T, path string, want, got any) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		if list, ok := got.([]any); ok { // a map as a list of name and value
			named := map[string]any{}
			for _, el := range list {
				m := el.(map[string]any)
				named[m["name"].(string)] = m["value"]
			}
			got = named
		}
		g, ok := got.(map[string]any)
		if !assert.True(t, ok, "%s: %v is not an object", path, got) {
			return
		}
		for k, v := range w {
			if assert.Contains(t, g, k, "%s: the member %s", path, k) {
				covers(t, path+"."+k, v, g[k])
			}
		}
	case []any:
		g, ok := got.([]any)
		if assert.True(t, ok, "%s: %v is not a list", path, got) && assert.Len(t, g, len(w), path) {
			for i := range w {
				covers(t, path, w[i], g[i])
			}
		}
	default:
		assert.Equal(t, want, got, path)
	}
}
