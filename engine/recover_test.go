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
	"github.com/crw-dev/crw/engine/diagnosis"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

const recoverWorkflow = `import { agent } from "crw:agent";
import crw from "crw";
const go = { type: "object", properties: { go: { type: "boolean" } }, required: ["go"], additionalProperties: false };
export default async function main() {
  const lost = await agent.call({ role: "explorer", node: "n", prompt: "try" });
  const held = await agent.call({ role: "explorer", node: "n", prompt: "again" });
  await crw.decide({ id: "go", question: "go on?", schema: go });
  const after = await agent.call({ role: "explorer", node: "n", prompt: "after" });
  return [lost.status, held.reason, after.status, after.reason];
}
`

// TestAVerdictReleasesTheNodesHold: a lost call holds its node; crw flow effects lists it with
// what to verify; a verdict (not_applied or applied) releases the node for the calls after it,
// while the lost call stays unknown; without one the node stays held. The run replays as it ran.
func TestAVerdictReleasesTheNodesHold(t *testing.T) {
	t.Parallel()
	for _, verdict := range []string{"", decisions.VerdictNotApplied, decisions.VerdictApplied} {
		ctx := context.Background()
		svc, _ := enginetest.LocalService(t)
		wf := filepath.Join(t.TempDir(), "wf.js")
		require.NoError(t, os.WriteFile(wf, []byte(recoverWorkflow), 0o644))
		id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
		require.NoError(t, err)
		a, err := fake.ParseAnswers("a.json", []byte(`{"answers": [{"match": {"call": 1}, "turns": [{"lost": true}]}, {"match": {"call": 3}, "turns": [{"text": "ran"}]}]}`))
		require.NoError(t, err)
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
		require.NoError(t, err)
		require.Equal(t, store.RunWaitingDecision, end.Status, "%+v", end.Error)

		effects, err := svc.Effects(ctx, 100, id)
		require.NoError(t, err)
		require.Len(t, effects, 1)
		e := effects[0]
		assert.Equal(t, diagnosis.Effect{Run: id, Call: "c1", Kind: "call", Node: "n", Role: "explorer", Reason: "dispatch_unknown",
			Thread: "fake-c1", Turns: []string{"fake-c1-t1"},
			Verify: "whether the host ran the turn of call c1 (thread fake-c1, turn fake-c1-t1) and what it answered",
			Then:   "crw flow recover " + id + " c1 --not-applied, or --applied [--output @FILE]"}, e)

		_, err = svc.Recover(ctx, id, "c2", decisions.Verdict{Verdict: decisions.VerdictNotApplied}, "t", false)
		assert.Equal(t, errs.InvalidRequest, errs.CodeOf(err), "a held call is no unknown outcome: %v", err)
		_, err = svc.Recover(ctx, id, "c1", decisions.Verdict{}, "t", false)
		assert.Equal(t, errs.InvalidRequest, errs.CodeOf(err), "no verdict: %v", err)
		if verdict != "" {
			v := decisions.Verdict{Verdict: verdict}
			if verdict == decisions.VerdictApplied {
				v.Output = json.RawMessage(`"it ran after all"`)
			}
			got, err := svc.Recover(ctx, id, "c1", v, "uid 1", false)
			require.NoError(t, err)
			assert.True(t, got.Journaled)
			assert.Equal(t, "n", got.Node)
			_, err = svc.Recover(ctx, id, "c1", v, "uid 1", false)
			assert.ErrorContains(t, err, "reconciled already")
			effects, err = svc.Effects(ctx, 100, id)
			require.NoError(t, err)
			assert.Empty(t, effects)
		}
		_, err = svc.Answer(ctx, id, "go", []byte(`{"go": true}`), "t", false)
		require.NoError(t, err)
		end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
		if verdict == "" {
			assert.JSONEq(t, `["unknown", "recovery_hold", "held", "recovery_hold"]`, string(end.Result))
		} else {
			assert.JSONEq(t, `["unknown", "recovery_hold", "completed", null]`, string(end.Result), verdict)
		}
		rows, err := svc.Rows(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, journal.TypeOutcomeUnknown, enginetest.Terminal(t, rows, "c1").Type, "the lost call's rows stay")
		if verdict == decisions.VerdictApplied {
			r := enginetest.OfType(rows, journal.TypeEffectReconciled)[0]
			assert.JSONEq(t, `"it ran after all"`, string(r.Output))
			assert.Equal(t, "uid 1", r.By)
			assert.NotEmpty(t, r.OutputDigest)
		}
		rep, err := svc.Shadow(ctx, id, shadow.Options{Script: wf})
		require.NoError(t, err)
		assert.False(t, rep.Differs(), "%s: %+v", verdict, rep)
	}
}

// TestALiveRunTakesItsVerdict: a verdict given while the run's process lives is left for it;
// the process journals it and the node's next call runs, in the same process.
func TestALiveRunTakesItsVerdict(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), enginetest.Timeout)
	defer cancel()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() {
  const slow = agent.call({ role: "explorer", node: "slow", prompt: "take your time" });
  const lost = await agent.call({ role: "explorer", node: "n", prompt: "try" });
  await slow;
  const after = await agent.call({ role: "explorer", node: "n", prompt: "after" });
  return [lost.status, after.status];
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
		effects, err := svc.Effects(ctx, 100, id)
		return err == nil && len(effects) == 1
	}, enginetest.Timeout, 20*time.Millisecond)
	got, err := svc.Recover(ctx, id, "c2", decisions.Verdict{Verdict: decisions.VerdictNotApplied}, "uid 1", false)
	require.NoError(t, err)
	assert.True(t, got.Journaled, "the live process journaled it")
	slow.Open()
	end := <-done
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["unknown", "completed"]`, string(end.Result))
}

// TestANodeStaysHeldUntilEveryUnknownCallHasAVerdict: two calls of one node ended unknown: a
// verdict on one leaves the node held by the other, and only the second verdict releases it.
func TestANodeStaysHeldUntilEveryUnknownCallHasAVerdict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
import crw from "crw";
const go = { type: "object", properties: { go: { type: "boolean" } }, required: ["go"], additionalProperties: false };
export default async function main() {
  const both = await Promise.all([agent.call({ role: "explorer", node: "n", prompt: "one" }), agent.call({ role: "explorer", node: "n", prompt: "two" })]);
  await crw.decide({ id: "first", question: "go on?", schema: go });
  const middle = await agent.call({ role: "explorer", node: "n", prompt: "middle" });
  await crw.decide({ id: "second", question: "go on?", schema: go });
  const last = await agent.call({ role: "explorer", node: "n", prompt: "last" });
  return [both[0].status, both[1].status, middle.reason, last.status];
}
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	a, err := fake.ParseAnswers("a.json", []byte(`{"answers": [{"match": {"call": 1}, "turns": [{"lost": true, "delay_ms": 2000}]}, {"match": {"call": 2}, "turns": [{"lost": true, "delay_ms": 1000}]}]}`))
	require.NoError(t, err)
	step := func(decision string) *store.Status {
		if decision != "" {
			_, err := svc.Answer(ctx, id, decision, []byte(`{"go": true}`), "t", false)
			require.NoError(t, err)
		}
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
		require.NoError(t, err)
		return end
	}
	require.Equal(t, store.RunWaitingDecision, step("").Status)
	got, err := svc.Recover(ctx, id, "c2", decisions.Verdict{Verdict: decisions.VerdictNotApplied}, "t", false)
	require.NoError(t, err)
	assert.Equal(t, []string{"c1"}, got.HeldBy)
	require.Equal(t, store.RunWaitingDecision, step("first").Status)
	got, err = svc.Recover(ctx, id, "c1", decisions.Verdict{Verdict: decisions.VerdictNotApplied}, "t", false)
	require.NoError(t, err)
	assert.Empty(t, got.HeldBy)
	end := step("second")
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["unknown", "unknown", "recovery_hold", "completed"]`, string(end.Result))
}

// TestVerdictIdsAreNotDecisions: a workflow cannot ask a decision an operator's verdict would
// answer.
func TestVerdictIdsAreNotDecisions(t *testing.T) {
	t.Parallel()
	res, _ := enginetest.Run(t, `import crw from "crw";
const schema = { type: "object", properties: { verdict: { type: "string" } }, required: ["verdict"], additionalProperties: false };
export default async function main() {
  try { await crw.decide({ id: "effect/c1", question: "q", schema }); return "asked"; } catch (e) { return e.code; }
}
`, "")
	require.Equal(t, store.RunCompleted, res.Status)
	assert.JSONEq(t, `"invalid_request"`, string(res.Result))
}
