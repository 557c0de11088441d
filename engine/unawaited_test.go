package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// TestAForgottenAwaitIsAWarning: an agent.call whose promise the workflow never awaited nor
// observed gets one warning row naming its site; calls awaited late, then'd or joined are not
// warned of, and a resume of the paused run does not warn again.
func TestAForgottenAwaitIsAWarning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() {
  agent.call({ role: "explorer", node: "a", prompt: "forgotten" });
  const later = agent.call({ role: "explorer", node: "b", prompt: "later" });
  const now = await agent.call({ role: "explorer", node: "c", prompt: "now" });
  await later;
  const thened = agent.call({ role: "explorer", node: "d", prompt: "then" }).then(() => {});
  const both = Promise.all([agent.call({ role: "explorer", node: "e", prompt: "joined" })]);
  const paused = await agent.call({ role: "explorer", node: "f", prompt: "paused" });
  await both;
  await thened;
  return [now.status, paused.status];
}
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	a, err := fake.ParseAnswers("a.json", []byte(`{"answers": [{"match": {"node": "f"}, "turns": [{"error": "rateLimitExceeded"}]}]}`))
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunPaused, end.Status, "%+v", end.Error)
	warnings := func() []journal.Row {
		rows, err := svc.Rows(ctx, id)
		require.NoError(t, err)
		var out []journal.Row
		for _, r := range enginetest.OfType(rows, journal.TypeWarning) {
			if r.Reason == replay.ReasonUnawaited {
				out = append(out, r)
			}
		}
		return out
	}
	got := warnings()
	require.Len(t, got, 1)
	assert.Equal(t, "c1", got[0].Call)
	assert.Equal(t, "agent.call at "+wf+":3:9 (call c1) was never awaited: the workflow ended without reading its result (a forgotten await?)", got[0].Detail)

	end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["completed", "completed"]`, string(end.Result))
	assert.Len(t, warnings(), 1, "the resume does not warn again")
}

// TestACallOutlivingTheWorkflowIsAWarning: calls awaited only inside async callbacks that main
// never awaited (forEach's) are still under way when main returns: each is warned of.
func TestACallOutlivingTheWorkflowIsAWarning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() {
  const seen = [];
  ["a", "b"].forEach(async (n) => { seen.push((await agent.call({ role: "explorer", node: n, prompt: n })).status); });
  const waited = await agent.call({ role: "explorer", node: "w", prompt: "waited" });
  return [waited.status, seen.length];
}
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	a, err := fake.ParseAnswers("a.json", []byte(`{"answers": [{"match": {"node": "a"}, "turns": [{"text": "x"}]}, {"match": {"node": "b"}, "turns": [{"text": "x"}]}]}`))
	require.NoError(t, err)
	// a's and b's answers are held until w's call_ended event, sent once w's result was queued
	// for the script: theirs come after it, when main has returned.
	held := enginetest.GateAnswers(fake.New(a, nil), enginetest.Nodes("a", "b"))
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: held, OnEvent: func(e progress.Event) {
		if e.Kind == progress.EventCallEnded && e.Node == "w" {
			held.Open()
		}
	}})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["completed", 0]`, string(end.Result))
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	var got []string
	for _, r := range enginetest.OfType(rows, journal.TypeWarning) {
		if r.Reason == replay.ReasonUnawaited {
			got = append(got, r.Call+": "+r.Detail)
		}
	}
	assert.Equal(t, []string{
		"c1: agent.call at " + wf + ":4:60 (call c1) was still under way when the workflow returned: its result reached no one (an async callback nobody awaited, as forEach's?)",
		"c2: agent.call at " + wf + ":4:60 (call c2) was still under way when the workflow returned: its result reached no one (an async callback nobody awaited, as forEach's?)",
	}, got)
}
