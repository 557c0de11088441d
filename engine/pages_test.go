package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/store"
)

// A run whose journal spans many pages, replayed keeping none of its calls' rows, reads every
// call's rows again from the state folder's journal a page at a time: the resume gives the
// script each recorded answer in order, and the shadow matches every call.
func TestAReplayReadsALongJournalAgainAPageAtATime(t *testing.T) {
	t.Parallel()
	const calls = 1000 // ~3,500 rows: four pages of replay.PageRows
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	svc.ReplayBudget = -1
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
import crw from "crw";
const answer = { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false };
export default async function main({ calls }) {
  let sum = 0, order = true;
  for (let i = 1; i <= calls; i++) {
    const r = await agent.call({ role: "reviewer", node: "n", prompt: "Count " + i, schema: answer });
    sum += r.output.n;
    order = order && r.callId === "c" + i;
  }
  const d = await crw.decide({ id: "done", question: "Done?", schema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false } });
  return [sum, order, d.ok];
}`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Input: json.RawMessage(`{"calls": 1000}`)})
	require.NoError(t, err)
	// Call i answers i: the sum tells a result delivered to the wrong call.
	var entries []string
	for i := 1; i <= calls; i++ {
		entries = append(entries, fmt.Sprintf(`{"match": {"call": %d}, "turns": [{"json": {"n": %d}}]}`, i, i))
	}
	answers, err := fake.ParseAnswers("a.json", []byte(`{"answers": [`+strings.Join(entries, ",")+`]}`))
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(answers, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunWaitingDecision, end.Status, "%+v", end.Error)
	_, err = svc.Answer(ctx, id, "done", json.RawMessage(`{"ok": true}`), "uid 1", false)
	require.NoError(t, err)

	rep, err := svc.Shadow(ctx, id, shadow.Options{Script: wf})
	require.NoError(t, err)
	assert.False(t, rep.Differs(), "%+v", rep.Divergences)
	assert.Equal(t, calls, rep.Matched)

	end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `[500500, true, true]`, string(end.Result), "the sum of 1..1000, each answer to its own call")
}
