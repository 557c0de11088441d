package engine_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// liveVerdictThenCommit keeps its process alive with a slow call (held by the test's backend
// until the verdicts are given), loses a call of node n, waits
// for the verdict, builds again on n and commits it.
const liveVerdictThenCommit = `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const slow = agent.call({ role: "explorer", node: "other", prompt: "keep the process alive" });
  const a = await agent.call({ role: "executor", node: "n", prompt: "build" });
  if (a.status !== "unknown") return ["no loss", a.status];
  const v = await crw.effect(a);
  const b = await agent.call({ role: "executor", node: "n", prompt: "finish" });
  const kept = await crw.commit("n", { message: "the change" });
  return [v.verdict, b.status, kept.node, (await slow).status];
}
`

// TestTwoLiveVerdictsAtOnceThenACommit: two operators give their verdicts on the same lost
// call at once while the run's process lives: one is journaled, once, and the script goes on
// by it in the same process; the next call on the node runs, and crw.commit on the node
// commits.
func TestTwoLiveVerdictsAtOnceThenACommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, id, _, repo := createdInRepo(t, liveVerdictThenCommit)
	a, err := fake.ParseAnswers("a.json", []byte(`{"answers": [
  {"match": {"call": 1}, "turns": [{"text": "late"}]},
  {"match": {"call": 2}, "turns": [{"lost": true}]},
  {"match": {"call": 3}, "turns": [{"text": "done", "files": {"out.txt": "x\n"}}]}
]}`))
	require.NoError(t, err)
	// the slow call is in flight until both verdicts were given
	slow := enginetest.Gate(fake.New(a, nil), func(c backend.Call) bool { return c.Index == 1 })
	done := make(chan *store.Status, 1)
	go func() {
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: slow})
		assert.NoError(t, err)
		done <- end
	}()
	waitForRow(t, svc, id, func(r journal.Row) bool { return r.Type == journal.TypeOutcomeUnknown && r.Call == "c2" })

	var wg sync.WaitGroup
	errors := make([]error, 2)
	for i, v := range []string{decisions.VerdictNotApplied, decisions.VerdictApplied} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errors[i] = svc.Recover(ctx, id, "c2", decisions.Verdict{Verdict: v}, v, false)
		}()
	}
	wg.Wait()
	slow.Open()
	end := <-done
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)

	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	reconciled := enginetest.OfType(rows, journal.TypeEffectReconciled)
	require.Len(t, reconciled, 1, "one verdict is journaled")
	taken := reconciled[0].Verdict
	assert.Equal(t, taken, reconciled[0].By)
	assert.JSONEq(t, `["`+taken+`", "completed", "n", "completed"]`, string(end.Result))
	for i, v := range []string{decisions.VerdictNotApplied, decisions.VerdictApplied} {
		if v == taken {
			assert.NoError(t, errors[i], v)
		} else {
			assert.ErrorContains(t, errors[i], "reconciled already", v)
		}
	}
	assert.Equal(t, 1, enginetest.Count(rows, "", journal.TypeStarted), "one process did it all")
	assert.Equal(t, journal.TypeOutcomeUnknown, enginetest.Terminal(t, rows, "c2").Type, "the lost call's rows are not rewritten")
	assert.Equal(t, journal.TypeCompleted, enginetest.Terminal(t, rows, "c3").Type)
	assert.Less(t, reconciled[0].Seq, enginetest.Terminal(t, rows, "c1").Seq, "the verdict was taken while the slow call was in flight")
	seq := func(typ, call string) uint64 {
		for _, r := range rows {
			if r.Type == typ && (r.Call == call || r.Effect == call) {
				return r.Seq
			}
		}
		t.Fatalf("no %s row of %s", typ, call)
		return 0
	}
	assert.Less(t, seq(journal.TypeOutcomeUnknown, "c2"), seq(journal.TypeEffectReconciled, "c2"))
	assert.Less(t, seq(journal.TypeEffectReconciled, "c2"), seq(journal.TypePrepared, "c3"), "the node's next call comes after the verdict")
	assert.Less(t, seq(journal.TypeCompleted, "c3"), seq(journal.TypeCommitIntent, ""))
	assert.Equal(t, 1, enginetest.Count(rows, "", journal.TypeCommitResult))
	assert.NotEmpty(t, git(t, repo, "rev-parse", "refs/crw/flow/"+id+"/nodes/n"))
	enginetest.CheckJournal(t, rows)
}
