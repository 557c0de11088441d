package offline_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/offline"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

const run = "20261204-120000-0ff11e"

// newRun is a run on a memory store whose journal holds rows (none: no process ran it).
func newRun(t *testing.T, rows ...*journal.Row) (*mem.Store, *store.Spec) {
	t.Helper()
	st := mem.New()
	spec := &store.Spec{Run: run, Workflow: "/w/flow.js", Backend: "fake", ScriptDigest: "sha256:abc", Pool: 2}
	require.NoError(t, st.Create(context.Background(), spec))
	if len(rows) > 0 {
		lease, err := st.Acquire(context.Background(), run)
		require.NoError(t, err)
		_, err = lease.Journal().Write(rows...)
		require.NoError(t, err)
		require.NoError(t, lease.Release())
	}
	return st, spec
}

// writer is the run's offline writer, as engine.Service makes it: on its lease, over the
// History its journal reads to.
func writer(t *testing.T, st *mem.Store) *offline.Writer {
	t.Helper()
	lease, err := st.Acquire(context.Background(), run)
	require.NoError(t, err)
	j := lease.Journal()
	h, err := replay.ReadPages(func(from uint64, limit int, fn func(*journal.Row) error) error { return j.Each(from, limit, fn) })
	require.NoError(t, err)
	return offline.New(run, lease, h)
}

func rowsOf(t *testing.T, st *mem.Store) []journal.Row {
	t.Helper()
	var out []journal.Row
	require.NoError(t, st.Rows(context.Background(), run, 1, func(r *journal.Row) error {
		out = append(out, *r)
		return nil
	}))
	return out
}

func started() *journal.Row {
	return &journal.Row{Type: journal.TypeStarted, Run: run, Backend: "fake", Workflow: "/w/flow.js", ScriptDigest: "sha256:abc"}
}

// TestAnAnswerAndAVerdictAreWrittenOnce: the second answer to a decision, and the second
// verdict on a call, are refused by what the journal holds, naming who gave the first.
func TestAnAnswerAndAVerdictAreWrittenOnce(t *testing.T) {
	st, _ := newRun(t, started(),
		&journal.Row{Type: journal.TypeDecisionRequested, DecisionID: "ship", Question: "Ship it?", Schema: json.RawMessage(`{"type":"boolean"}`)})

	w := writer(t, st)
	require.NoError(t, w.Answer("ship", json.RawMessage(`true`), "ana"))
	require.NoError(t, w.Reconcile("c1", decisions.Verdict{Verdict: decisions.VerdictNotApplied}, "bo"))
	require.NoError(t, w.Close())

	w = writer(t, st)
	defer w.Close()
	err := w.Answer("ship", json.RawMessage(`false`), "cy")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `decision "ship" of run 20261204-120000-0ff11e was answered already (`)
	assert.Contains(t, err.Error(), "by ana)")
	err = w.Reconcile("c1", decisions.Verdict{Verdict: decisions.VerdictApplied}, "cy")
	assert.EqualError(t, err, "invalid_request: call c1 of run 20261204-120000-0ff11e was reconciled already (not_applied, by bo)")
	err = w.Change(&journal.Row{Type: journal.TypeEnded})
	assert.EqualError(t, err, "invalid_request: run 20261204-120000-0ff11e: a ended row is no change to a resume")

	rows := rowsOf(t, st)
	require.Len(t, rows, 4)
	assert.Equal(t, journal.TypeDecisionAnswered, rows[2].Type)
	assert.Equal(t, "ship", rows[2].DecisionID)
	assert.JSONEq(t, `true`, string(rows[2].Output))
	assert.Equal(t, journal.TypeEffectReconciled, rows[3].Type)
	assert.Equal(t, "c1", rows[3].Effect)
}

// TestAnAnswerFitsTheSchemaTheDecisionWasLastAskedWith: a decision asked anew after its answer
// (a resume ran a call a pause held again) takes an answer again, checked against the newest
// schema under the lease, whatever its caller checked it against before.
func TestAnAnswerFitsTheSchemaTheDecisionWasLastAskedWith(t *testing.T) {
	ask := func(enum string) *journal.Row {
		return &journal.Row{Type: journal.TypeDecisionRequested, DecisionID: "pick", Question: "Pick",
			Schema: json.RawMessage(`{"type":"string","enum":["` + enum + `"]}`)}
	}
	st, _ := newRun(t, started(), ask("held"),
		&journal.Row{Type: journal.TypeDecisionAnswered, DecisionID: "pick", Output: json.RawMessage(`"held"`), By: "ana"},
		started(), ask("completed"))
	w := writer(t, st)
	defer w.Close()
	err := w.Answer("pick", json.RawMessage(`"held"`), "bo")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `the answer to "pick" does not satisfy the schema it was last asked with`)
	require.NoError(t, w.Answer("pick", json.RawMessage(`"completed"`), "bo"))
	rows := rowsOf(t, st)
	assert.Equal(t, journal.TypeDecisionAnswered, rows[len(rows)-1].Type)
	assert.JSONEq(t, `"completed"`, string(rows[len(rows)-1].Output))
}

// TestACancelEndsTheOpenCallsThroughTheirStateMachines: an unheld run's open calls end held
// cancelled with the turns they started, the clean-up's row comes before the ended row, and a
// run that has ended is not cancelled again.
func TestACancelEndsTheOpenCallsThroughTheirStateMachines(t *testing.T) {
	st, spec := newRun(t, started(),
		&journal.Row{Type: journal.TypePrepared, Call: "c1", Index: 1, Role: "reviewer", Node: "n", Attempt: 1},
		&journal.Row{Type: journal.TypePrepared, Call: "c2", Index: 2, Role: "reviewer", Node: "n", Attempt: 1},
		&journal.Row{Type: journal.TypeCompleted, Call: "c2", Output: json.RawMessage(`{}`)})

	w := writer(t, st)
	dirs := 0
	require.NoError(t, w.Cancel(spec, func(dir string) *journal.Row {
		dirs++
		return &journal.Row{Type: journal.TypeWarning, Reason: "worktree_left", Detail: "kept"}
	}))
	require.NoError(t, w.Close())
	assert.Equal(t, 1, dirs)

	rows := rowsOf(t, st)
	require.Len(t, rows, 7)
	assert.Equal(t, journal.TypeHeld, rows[4].Type)
	assert.Equal(t, "c1", rows[4].Call)
	assert.Equal(t, "cancelled", rows[4].Reason)
	assert.Equal(t, journal.TypeWarning, rows[5].Type)
	assert.Equal(t, journal.TypeEnded, rows[6].Type)
	assert.Equal(t, string(store.RunCancelled), rows[6].Status)

	w = writer(t, st)
	defer w.Close()
	assert.EqualError(t, w.Cancel(spec, nil), "run_unavailable: run 20261204-120000-0ff11e has ended (cancelled): there is nothing to cancel")
}

// TestACancelOfARunNoProcessRanOpensWithTheStartedRow: the journal of a run cancelled before
// any process ran it reads as every run's: a started row (the runner's, with the spec's
// script digest and pool), then the ended row.
func TestACancelOfARunNoProcessRanOpensWithTheStartedRow(t *testing.T) {
	st, spec := newRun(t)
	w := writer(t, st)
	require.NoError(t, w.Cancel(spec, nil))
	require.NoError(t, w.Close())
	rows := rowsOf(t, st)
	require.Len(t, rows, 2)
	assert.Equal(t, journal.TypeStarted, rows[0].Type)
	assert.Equal(t, "sha256:abc", rows[0].ScriptDigest)
	assert.Equal(t, 2, rows[0].Pool)
	assert.Equal(t, "fake", rows[0].Backend)
	assert.Equal(t, journal.TypeEnded, rows[1].Type)
}
