package effects_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/placer"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/runner/effects"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
)

// host is a run's host that keeps what the effects write and ask.
type host struct {
	rows    []*journal.Row
	stopped error
	ended   map[string]effects.Ended
	asked   []string
}

func (h *host) Stopping() error { return nil }
func (h *host) Stop(err error)  { h.stopped = err }
func (h *host) Append(rows ...*journal.Row) uint64 {
	h.rows = append(h.rows, rows...)
	return uint64(len(h.rows))
}
func (h *host) Sync(uint64) error              { return nil }
func (h *host) FlushSoon()                     {}
func (h *host) Logged(e *errs.Error) string    { return e.Detail }
func (h *host) ToldHolds(string) []string      { return nil }
func (h *host) AskStep(id string)              { h.asked = append(h.asked, id) }
func (h *host) LeftAt() (uint64, bool)         { return 0, false }
func (h *host) OwedWriter(string) *replay.Call { return nil }
func (h *host) Ended(id string) (effects.Ended, bool) {
	e, ok := h.ended[id]
	return e, ok
}

const run = "20261204-120000-0ff11e"

func newEffects(t *testing.T, h *host, history *replay.History, tierSteps string) *effects.Effects {
	t.Helper()
	repo := enginetest.GitRepo(t, map[string]string{"README.md": "# the project\n"})
	pl := placer.New(placer.Config{Run: run, Repo: repo, Dir: t.TempDir(), History: history, Journal: h, Stop: context.Background(),
		Logged: h.Logged, Flush: h.FlushSoon})
	return effects.New(effects.Config{Run: run, History: history, Placer: pl, TierSteps: tierSteps}, h)
}

func history(t *testing.T, rows ...*journal.Row) *replay.History {
	t.Helper()
	for i, r := range rows {
		r.Seq = uint64(i + 1)
	}
	h, err := replay.ReadPages(func(from uint64, limit int, fn func(*journal.Row) error) error {
		for _, r := range rows[from-1:] {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	return h
}

// TestARefusedCommitIsRecordedAndReplayed: a commit the worktrees refuse (the node has no
// worktree yet) is recorded as an intent with its error; a replay throws the same error and
// writes nothing; a replay that commits another node than the journal's stops the run.
func TestARefusedCommitIsRecordedAndReplayed(t *testing.T) {
	h := &host{}
	_, err := newEffects(t, h, nil, "").Commit("build", "the work")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `node "build" has no worktree: no executor call of it has run`)
	require.Len(t, h.rows, 1)
	intent := h.rows[0]
	assert.Equal(t, journal.TypeCommitIntent, intent.Type)
	assert.Equal(t, "invalid_request", intent.Status)
	assert.Equal(t, "build", intent.Node)

	recorded := history(t, &journal.Row{Type: journal.TypeStarted, Run: run}, intent)
	again := &host{}
	_, err2 := newEffects(t, again, recorded, "").Commit("build", "the work")
	assert.Equal(t, err.Error(), err2.Error(), "the same error on a replay")
	assert.Empty(t, again.rows, "a replay writes nothing")

	other := &host{}
	_, err = newEffects(t, other, history(t, &journal.Row{Type: journal.TypeStarted, Run: run}, intent), "").Commit("test", "the work")
	assert.ErrorContains(t, err, `crw.commit #1: the script commits node "test"`)
	assert.ErrorContains(t, other.stopped, `crw.commit #1: the script commits node "test" with message "the work"; the journal's commit #1 is of node "build"`)
}

// TestATierStepTakesANullModelOfTheNodesExecutor: only an ended executor call of the node
// that ended null_model is evidence; the step moves the node to the next tier once, asks its
// decision under --tier-steps ask, and a replay gives the recorded step.
func TestATierStepTakesANullModelOfTheNodesExecutor(t *testing.T) {
	h := &host{ended: map[string]effects.Ended{
		"c1": {Node: "build", Role: "executor", Status: journal.StatusNullModel},
		"c2": {Node: "build", Role: "executor", Status: journal.StatusCompleted},
		"c3": {Node: "build", Role: "reviewer", Status: journal.StatusNullModel},
	}}
	fx := newEffects(t, h, nil, "ask")
	for evidence, want := range map[string]string{
		"c9": `the evidence names call "c9", which is no ended call of this run`,
		"c2": `the evidence is call c2, which ended completed: only a null_model is evidence for a tier step`,
		"c3": `the evidence is call c3, a reviewer call: a tier step moves a node's executor calls`,
	} {
		_, err := fx.TierStep("build", evidence)
		assert.ErrorContains(t, err, want, evidence)
	}
	_, err := fx.TierStep("test", "c1")
	assert.ErrorContains(t, err, `the evidence is call c1, of node "build", not of node "test"`)
	assert.Zero(t, fx.Tier("build"))

	out, err := fx.TierStep("build", "c1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"node":"build","tier":1,"role":"executor-t1","pair":{},"evidence":"c1","decision":"tier-step/build/1"}`, string(out))
	assert.Equal(t, 1, fx.Tier("build"))
	assert.Equal(t, []string{"tier-step/build/1"}, h.asked)
	require.Len(t, h.rows, 2)
	assert.Equal(t, journal.TypeTierStep, h.rows[0].Type)
	assert.Equal(t, 1, h.rows[0].Alloc, "the node's next allocation")
	assert.Equal(t, journal.TypeDecisionRequested, h.rows[1].Type)
	assert.JSONEq(t, effects.ApproveSchema, string(h.rows[1].Schema))
	_, err = fx.TierStep("build", "c1")
	assert.ErrorContains(t, err, `node "build" runs at the top tier already (executor-t1)`)

	again := &host{ended: h.ended}
	replayed, err := newEffects(t, again, history(t, &journal.Row{Type: journal.TypeStarted, Run: run}, h.rows[0], h.rows[1]), "ask").TierStep("build", "c1")
	require.NoError(t, err)
	assert.JSONEq(t, string(out), string(replayed))
	assert.Empty(t, again.rows)
}

// TestARehearsalCommitsNothing: a dry run's commit answers a stand-in and writes nothing.
func TestARehearsalCommitsNothing(t *testing.T) {
	h := &host{}
	pl := placer.New(placer.Config{Run: run, Journal: h, Stop: context.Background(), Logged: h.Logged, Flush: h.FlushSoon})
	out, err := effects.New(effects.Config{Run: run, DryRun: true, Placer: pl}, h).Commit("build", "m")
	require.NoError(t, err)
	var res effects.CommitResult
	require.NoError(t, json.Unmarshal(out, &res))
	assert.Equal(t, effects.CommitResult{Node: "build", Commit: "dry-run", Tree: "dry-run", Parent: "dry-run",
		Ref: "refs/crw/flow/" + run + "/nodes/build", Message: "m"}, res)
	assert.Empty(t, h.rows)
}
