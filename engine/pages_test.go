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
	"github.com/crw-dev/crw/journal"
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

	// Its trace, read a part at a time, keeping none of the calls' rows either: each call's
	// lines are read again from the file.
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	var trace strings.Builder
	require.NoError(t, journal.Export(&trace, id, rows))
	tracePath := filepath.Join(t.TempDir(), "trace.jsonl")
	require.NoError(t, os.WriteFile(tracePath, []byte(trace.String()), 0o600))
	f, err := os.Open(tracePath)
	require.NoError(t, err)
	defer f.Close()
	tf, err := journal.OpenTrace(f)
	require.NoError(t, err)
	h, traceErr, err := shadow.ReadTrace(tf, -1)
	require.NoError(t, traceErr)
	require.NoError(t, err)
	rep, err = svc.Shadow(ctx, "", shadow.Options{Script: wf, History: h, Trace: tf})
	require.NoError(t, err)
	assert.False(t, rep.Differs(), "%+v", rep.Divergences)
	assert.Equal(t, calls, rep.Matched)
	assert.Equal(t, "[500500,true,true]", string(rep.Result), "each answer to its own call")

	end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `[500500, true, true]`, string(end.Result), "the sum of 1..1000, each answer to its own call")
}

// A recorded call a resume delivers from what its first reading kept, or from its rows read
// again, gives the script the same CallResult, and a continuation of it goes on with its
// thread: the kept thread is the call's own.
func TestAKeptCallIsDeliveredAsItsRowsWouldBe(t *testing.T) {
	t.Parallel()
	const wf = `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const a = await agent.call({ role: "explorer", node: "a", prompt: "Look at A" });
  await crw.decide({ id: "go", question: "Go on?", schema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false } });
  const b = await agent.call({ role: "explorer", node: "b", prompt: "Go on from A", resume: a.handle });
  return [JSON.stringify(a), b.status, b.meta.threadId];
}`
	results := map[string]string{}
	for name, budget := range map[string]int{"kept": 0, "read again": -1} {
		ctx := context.Background()
		svc, _ := enginetest.LocalService(t)
		svc.ReplayBudget = budget
		path := filepath.Join(t.TempDir(), "wf.js")
		require.NoError(t, os.WriteFile(path, []byte(wf), 0o644))
		id, err := svc.Create(ctx, engine.CreateOptions{Workflow: path})
		require.NoError(t, err)
		answers, err := fake.ParseAnswers("a.json", []byte(`{"answers": [{"match": {"node": "a"}, "turns": [{"text": "A is fine", "tokens": {"input": 7, "output": 3}}]}]}`))
		require.NoError(t, err)
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(answers, nil)})
		require.NoError(t, err)
		require.Equal(t, store.RunWaitingDecision, end.Status, "%s: %+v", name, end.Error)
		_, err = svc.Answer(ctx, id, "go", json.RawMessage(`{"ok": true}`), "uid 1", false)
		require.NoError(t, err)
		end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(answers, nil)})
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, end.Status, "%s: %+v", name, end.Error)
		var got []string
		require.NoError(t, json.Unmarshal(end.Result, &got), name)
		require.Len(t, got, 3, name)
		assert.Equal(t, []string{"completed", "fake-c2"}, got[1:], "%s: the continuation ran on a thread of its own", name)
		var a map[string]any
		require.NoError(t, json.Unmarshal([]byte(got[0]), &a), name)
		assert.Equal(t, "completed", a["status"], name)
		assert.Equal(t, "A is fine", a["output"], name)
		meta := a["meta"].(map[string]any)
		assert.Equal(t, "fake-c1", meta["threadId"], name)
		assert.Equal(t, []any{"fake-c1-t1"}, meta["turnIds"], name)
		assert.Equal(t, 10.0, meta["tokens"].(map[string]any)["total"], name)
		results[name] = strings.ReplaceAll(got[0], id, "RUN") // two runs: their ids differ

		var chained string
		require.NoError(t, svc.Store.Rows(ctx, id, 1, func(r *journal.Row) error {
			if r.Type == journal.TypeThreadStarted && r.Call == "c2" {
				chained = r.ChainThread
			}
			return nil
		}))
		assert.Equal(t, "fake-c1", chained, "%s: the continuation carries the thread of the call it resumes", name)
	}
	assert.Equal(t, results["read again"], results["kept"])
}
