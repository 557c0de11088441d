package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// effectWorkflow waits for the verdict on a lost call and goes on by it: the recorded output
// when the turn ran, a new attempt when it did not.
const effectWorkflow = `import { agent } from "crw:agent";
import crw from "crw";
const plan = { type: "object", properties: { steps: { type: "integer" } }, required: ["steps"], additionalProperties: false };
export default async function main() {
  const first = await agent.call({ role: "explorer", node: "n", prompt: "plan", schema: plan });
  if (first.status !== "unknown") return ["no loss", first.status];
  const v = await crw.effect(first);
  if (v.verdict === "applied") return [v.verdict, v.output, v.by, Object.isFrozen(v)];
  const again = await agent.call({ role: "explorer", node: "n", prompt: "plan again", schema: plan });
  return [v.verdict, again.status, again.output, v.output];
}
`

const effectAnswers = `{"answers": [{"match": {"call": 1}, "turns": [{"lost": true}]}, {"match": {"call": 2}, "turns": [{"json": {"steps": 2}}]}]}`

// TestAWorkflowWaitsForTheVerdict: crw.effect on a lost call makes the run wait for the
// operator's verdict (waiting_decision, effect/<call>); an applied output that does not fit the
// call's schema is refused with nothing written; the verdict reaches the workflow on resume,
// which goes on by it, and the run replays as it ran.
func TestAWorkflowWaitsForTheVerdict(t *testing.T) {
	t.Parallel()
	for _, verdict := range []string{decisions.VerdictApplied, decisions.VerdictNotApplied} {
		ctx := context.Background()
		svc, _ := enginetest.LocalService(t)
		wf := filepath.Join(t.TempDir(), "wf.js")
		require.NoError(t, os.WriteFile(wf, []byte(effectWorkflow), 0o644))
		id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
		require.NoError(t, err)
		a, err := fake.ParseAnswers("a.json", []byte(effectAnswers))
		require.NoError(t, err)
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
		require.NoError(t, err)
		require.Equal(t, store.RunWaitingDecision, end.Status, "%+v", end.Error)
		st, err := svc.Status(ctx, id)
		require.NoError(t, err)
		require.Len(t, st.Decisions, 1)
		assert.Equal(t, "effect/c1", st.Decisions[0].ID)
		assert.Contains(t, st.Decisions[0].Question, "crw flow recover "+id+" c1 --applied")

		_, err = svc.Answer(ctx, id, "effect/c1", []byte(`{"steps": 1}`), "t", false)
		assert.Equal(t, errs.InvalidRequest, errs.CodeOf(err))
		assert.ErrorContains(t, err, "crw flow recover "+id+" c1")
		before, err := svc.Rows(ctx, id)
		require.NoError(t, err)
		for _, bad := range []string{`{"steps": "two"}`, `{"steps": 1, "more": true}`, `"text"`, `{`} {
			_, err = svc.Recover(ctx, id, "c1", decisions.Verdict{Verdict: decisions.VerdictApplied, Output: json.RawMessage(bad)}, "t", false)
			assert.Equal(t, errs.InvalidRequest, errs.CodeOf(err), "%s: %v", bad, err)
			assert.Equal(t, "output", errs.FieldOf(err).Field, "%s: %v", bad, err)
		}
		after, err := svc.Rows(ctx, id)
		require.NoError(t, err)
		assert.Len(t, after, len(before), "a refused verdict writes nothing")

		v := decisions.Verdict{Verdict: verdict}
		if verdict == decisions.VerdictApplied {
			v.Output = json.RawMessage(`{ "steps" : 7 }`)
		}
		got, err := svc.Recover(ctx, id, "c1", v, "uid 1", false)
		require.NoError(t, err)
		assert.True(t, got.Journaled)
		assert.Zero(t, got.PID, "--no-resume starts nothing")
		end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
		if verdict == decisions.VerdictApplied {
			assert.JSONEq(t, `["applied", {"steps": 7}, "uid 1", true]`, string(end.Result))
		} else {
			assert.JSONEq(t, `["not_applied", "completed", {"steps": 2}, null]`, string(end.Result))
		}
		rows, err := svc.Rows(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, journal.TypeOutcomeUnknown, enginetest.Terminal(t, rows, "c1").Type)
		rep, err := svc.Shadow(ctx, id, shadow.Options{Script: wf})
		require.NoError(t, err)
		assert.False(t, rep.Differs(), "%s: %+v", verdict, rep)
	}
}

// TestALiveWorkflowGetsItsVerdict: a verdict given while the run's process lives reaches the
// crw.effect that waits for it in that process; given before the workflow asks, crw.effect
// answers at once; both replay.
func TestALiveWorkflowGetsItsVerdict(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), enginetest.Timeout)
	defer cancel()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const slow = agent.call({ role: "explorer", node: "slow", prompt: "take your time" });
  const lost = await agent.call({ role: "explorer", node: "n", prompt: "try" });
  const v = await crw.effect(lost.callId);
  await slow;
  const again = await crw.effect(lost);
  return [v.verdict, v.output, again === v ? "same" : again.output];
}
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	a, err := fake.ParseAnswers("a.json", []byte(`{"answers": [{"match": {"node": "slow"}, "turns": [{"text": "done"}]}, {"match": {"call": 2}, "turns": [{"lost": true}]}]}`))
	require.NoError(t, err)
	// The slow call keeps the process alive: its answer is held until the verdict was given.
	slow := enginetest.GateAnswers(fake.New(a, nil), enginetest.Nodes("slow"))
	done := make(chan *store.Status, 1)
	go func() {
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: slow})
		assert.NoError(t, err)
		done <- end
	}()
	require.Eventually(t, func() bool {
		st, err := svc.Status(ctx, id)
		effects, _ := svc.Effects(ctx, 100, id)
		return err == nil && len(st.Decisions) == 1 && st.Decisions[0].ID == "effect/c2" && st.State == store.StateRunning && len(effects) == 1
	}, enginetest.Timeout, 20*time.Millisecond)
	got, err := svc.Recover(ctx, id, "c2", decisions.Verdict{Verdict: decisions.VerdictApplied, Output: json.RawMessage(`"it ran"`)}, "uid 1", false)
	require.NoError(t, err)
	assert.True(t, got.Journaled, "the live process journaled it")
	slow.Open()
	end := <-done
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["applied", "it ran", "it ran"]`, string(end.Result))
	rep, err := svc.Shadow(ctx, id, shadow.Options{Script: wf})
	require.NoError(t, err)
	assert.False(t, rep.Differs(), "%+v", rep)
}

// TestEffectTakesOnlyAnUnknownCall: crw.effect of a call that completed, of one not yet
// ended, or of no call of the run throws invalid_request at its call site.
func TestEffectTakesOnlyAnUnknownCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const got = [];
  const done = await agent.call({ role: "explorer", node: "n", prompt: "hi" });
  const open = agent.call({ role: "explorer", node: "m", prompt: "later" });
  for (const x of [done, "c2", "c99"]) {
    try { crw.effect(x); got.push("no throw"); } catch (e) { got.push(e.code + ": " + e.message); }
  }
  await open;
  return got;
}
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `[
		"invalid_request: crw.effect: call c1 ended completed: only a call that ended unknown gets a verdict",
		"invalid_request: crw.effect: call c2 has not ended: await its result first",
		"invalid_request: crw.effect: \"c99\" names no call of this run"]`, string(end.Result))
}
