package decisions_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/runtime/modules/crw"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

const run = "20261205-010000-a1b2c3"

// host is a runner with calls of fixed statuses ("" for one not ended).
type host struct {
	mu    sync.Mutex
	calls map[string]journal.CallStatus
	stop  error
}

func (h *host) Stopped() error { h.mu.Lock(); defer h.mu.Unlock(); return h.stop }
func (h *host) Stop(err error) { h.mu.Lock(); defer h.mu.Unlock(); h.stop = err }
func (h *host) FlushSoon()     {}
func (h *host) PublishSoon()   {}
func (h *host) Call(id string) (journal.CallStatus, bool) {
	s, ok := h.calls[id]
	return s, ok
}

// book is the Book of a first process of a run on the in-memory store, and the store, to leave
// answers with.
func book(t *testing.T, h *host) (*decisions.Book, *mem.Store, store.Journal) {
	t.Helper()
	st := mem.New()
	require.NoError(t, st.Create(context.Background(), &store.Spec{Schema: store.SpecSchema, Run: run, Workflow: "wf.js",
		Backend: "fake", Pool: 1, Input: json.RawMessage("null"), CreatedAt: time.Now().UTC()}))
	lease, err := st.Acquire(context.Background(), run)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lease.Release() })
	b := decisions.New(decisions.Config{Run: run, Replay: replay.New(nil, replay.Strict, nil), Journal: lease.Journal(),
		TakeAnswers: lease.TakeAnswers, Host: h})
	return b, st, lease.Journal()
}

// rowsOf lists the journal's rows as type/reason pairs.
func rowsOf(t *testing.T, j store.Journal) []string {
	t.Helper()
	require.NoError(t, j.Sync(j.LastSeq()))
	rows, err := j.Rows()
	require.NoError(t, err)
	var out []string
	for _, r := range rows {
		out = append(out, string(r.Type)+"/"+r.Reason+r.DecisionID+r.Effect)
	}
	return out
}

const okSchema = `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}`

func TestADecisionIsAnsweredOnceAndAgainstItsSchema(t *testing.T) {
	b, st, j := book(t, &host{})
	var got []string
	require.NoError(t, b.Decide(crw.Decision{ID: "ship", Question: "Ship?", Schema: json.RawMessage(okSchema)},
		func(v json.RawMessage, err error) { got = append(got, string(v)) }))
	require.NoError(t, b.Decide(crw.Decision{ID: "merge", Question: "Merge?", Schema: json.RawMessage(okSchema)},
		func(json.RawMessage, error) {}))
	assert.True(t, b.Waiting())
	assert.Equal(t, []journal.PendingDecision{{ID: "merge", Question: "Merge?"}, {ID: "ship", Question: "Ship?"}}, b.Pending())

	put := func(id, value string) {
		require.NoError(t, st.PutAnswer(context.Background(), run, store.Answer{ID: id, Value: json.RawMessage(value), By: "cli"}))
		b.Take()
	}
	put("ship", `{"ok":"yes"}`) // not its schema
	assert.Empty(t, got)
	assert.True(t, b.Waiting())
	put("ship", `{ "ok": true }`)
	put("ship", `{"ok":false}`) // answered already
	put("other", `{"ok":true}`) // no such decision

	assert.Equal(t, []string{`{"ok":true}`}, got)
	assert.Equal(t, []journal.PendingDecision{{ID: "merge", Question: "Merge?"}}, b.Pending())
	put("merge", `{"ok":false}`)
	assert.False(t, b.Waiting())
	put("ship", `{"ok":true}`) // nothing waits: left for a process that does
	assert.Equal(t, []string{"decision_requested/ship", "decision_requested/merge", "warning/answer_refusedship", "decision_answered/ship",
		"warning/answer_refusedship", "warning/answer_refusedother", "decision_answered/merge"}, rowsOf(t, j))

	err := b.Decide(crw.Decision{ID: "ship", Schema: json.RawMessage(okSchema)}, func(json.RawMessage, error) {})
	assert.ErrorContains(t, err, "asked already")
	err = b.Decide(crw.Decision{ID: decisions.EffectPrefix + "c1", Schema: json.RawMessage(okSchema)}, func(json.RawMessage, error) {})
	assert.ErrorContains(t, err, "reserved")
}

func TestAVerdictReleasesTheNodeItsUnknownCallHeld(t *testing.T) {
	h := &host{calls: map[string]journal.CallStatus{"c1": journal.StatusUnknown, "c2": journal.StatusCompleted, "c3": ""}}
	b, st, j := book(t, h)
	key := replay.EffectKey{1, 2, 3}
	b.EndedUnknown("n", "c1", &key)
	holder, held := b.Hold("n")
	assert.True(t, held)
	assert.Equal(t, "c1", holder)
	_, applied := b.AppliedBy(func() replay.EffectKey { return key })
	assert.False(t, applied)

	assert.ErrorContains(t, b.Effect("c2", func(json.RawMessage, error) {}), "only a call that ended unknown")
	assert.ErrorContains(t, b.Effect("c3", func(json.RawMessage, error) {}), "has not ended")
	assert.ErrorContains(t, b.Effect("c9", func(json.RawMessage, error) {}), "names no call")

	verdict := func(call, value string) {
		require.NoError(t, st.PutAnswer(context.Background(), run, store.Answer{ID: decisions.EffectPrefix + call, Value: json.RawMessage(value), By: "ops"}))
		b.Take()
	}
	verdict("c1", `{"verdict":"maybe"}`) // not a verdict
	_, held = b.Hold("n")
	assert.True(t, held)
	verdict("c2", `{"verdict":"applied"}`) // did not end unknown
	verdict("c1", `{"verdict":"applied","output":{"ok":true}}`)
	b.EndedUnknown("m", "c5", nil) // a hold left: the book takes what comes
	verdict("c1", `{"verdict":"not_applied"}`)

	_, held = b.Hold("n")
	assert.False(t, held, "the verdict releases the node")
	by, applied := b.AppliedBy(func() replay.EffectKey { return key })
	assert.True(t, applied)
	assert.Equal(t, "c1", by)
	assert.Equal(t, []string{"warning/verdict_refusedeffect/c1", "warning/verdict_refusedeffect/c2", "effect_reconciled/c1", "warning/verdict_refusedeffect/c1"}, rowsOf(t, j))
	// A refusal names the verdict's author and value (by digest): its author knows it for theirs.
	require.NoError(t, j.Sync(j.LastSeq()))
	rows, err := j.Rows()
	require.NoError(t, err)
	assert.Equal(t, "ops", rows[0].By)
	assert.Equal(t, journal.Digest(`{"verdict":"maybe"}`), rows[0].OutputDigest)
	assert.Equal(t, journal.Digest(`{"verdict":"not_applied"}`), rows[3].OutputDigest)
}

func TestATierStepDecisionGatesItsExecutor(t *testing.T) {
	b, st, _ := book(t, &host{})
	const id = "tier-step/n/1"
	assert.Nil(t, b.StepGate("executor-t1", "n"), "no step asked")
	b.AskStep(id)
	row := b.StepGate("executor-t1", "n")
	require.NotNil(t, row)
	assert.Equal(t, journal.TypeHeld, row.Type)
	assert.Equal(t, "missing_step_decision", row.Reason)
	assert.Nil(t, b.StepGate("reviewer", "n"), "only the executor-t1 call waits")

	require.NoError(t, st.PutAnswer(context.Background(), run, store.Answer{ID: id, Value: json.RawMessage(`{"approve":false}`), By: "owner"}))
	b.Take()
	row = b.StepGate("executor-t1", "n")
	require.NotNil(t, row)
	assert.Equal(t, journal.TypeRefused, row.Type)
	assert.Equal(t, "policy_refused", row.Reason)
}
