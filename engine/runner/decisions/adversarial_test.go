package decisions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/runtime/modules/crw"
	"github.com/crw-dev/crw/store"
)

// rowCount counts the journal's rows of type typ whose decision or call is id.
func rowCount(t *testing.T, j store.Journal, typ, id string) int {
	t.Helper()
	require.NoError(t, j.Sync(j.LastSeq()))
	rows, err := j.Rows()
	require.NoError(t, err)
	n := 0
	for _, r := range rows {
		if r.Type == typ && (r.DecisionID == id || r.Call == id || r.Effect == id) {
			n++
		}
	}
	return n
}

// loop is the script's loop as the Book sees it: what it posts runs on one goroutine.
type loop struct {
	mu   sync.Mutex
	todo []func() error
}

func (l *loop) post(fn func() error) { l.mu.Lock(); l.todo = append(l.todo, fn); l.mu.Unlock() }

func (l *loop) drain(t *testing.T) {
	t.Helper()
	for {
		l.mu.Lock()
		todo := l.todo
		l.todo = nil
		l.mu.Unlock()
		if len(todo) == 0 {
			return
		}
		for _, fn := range todo {
			require.NoError(t, fn())
		}
	}
}

// TestAnswersAndVerdictsFromManyGoroutinesAreJournaledOnce: every entry point of the Book at
// once; each decision and each verdict, answered twice by goroutines racing, gets one
// decision_answered or effect_reconciled row, and its promise settles once.
func TestAnswersAndVerdictsFromManyGoroutinesAreJournaledOnce(t *testing.T) {
	const n = 20
	h := &host{calls: map[string]journal.CallStatus{}}
	for i := range n {
		h.calls[fmt.Sprintf("c%d", i)] = journal.StatusUnknown
	}
	b, st, j := book(t, h)
	l := &loop{}
	b.SetPost(l.post)
	b.AskStep("tier-step/s/1")

	var mu sync.Mutex
	settled := map[string]int{}
	settle := func(id string) func(json.RawMessage, error) {
		return func(json.RawMessage, error) { mu.Lock(); settled[id]++; mu.Unlock() }
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, call, node := fmt.Sprintf("d%d", i), fmt.Sprintf("c%d", i), fmt.Sprintf("n%d", i%3)
			assert.NoError(t, b.Decide(crw.Decision{ID: id, Question: "?", Schema: json.RawMessage(okSchema)}, settle(id)))
			key := replay.EffectKey{byte(i)}
			b.EndedUnknown(node, call, &key)
			assert.NoError(t, b.Effect(call, settle(decisions.EffectPrefix+call)))
		}()
	}
	wg.Wait()
	for i := range n {
		for range 2 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				assert.NoError(t, st.PutAnswer(context.Background(), run, store.Answer{ID: fmt.Sprintf("d%d", i), Value: json.RawMessage(`{"ok":true}`), By: "a"}))
				assert.NoError(t, st.PutAnswer(context.Background(), run, store.Answer{ID: fmt.Sprintf("effect/c%d", i), Value: json.RawMessage(`{"verdict":"not_applied"}`), By: "ops"}))
				b.Take()
			}()
			go func() {
				defer wg.Done()
				b.Pending()
				b.Waiting()
				b.Hold(fmt.Sprintf("n%d", i%3))
				b.StepGate("executor-t1", "s")
				b.AppliedBy(func() replay.EffectKey { return replay.EffectKey{byte(i)} })
				b.ToldHolds("n0")
				b.Take()
			}()
		}
	}
	wg.Wait()
	b.Take() // what a goroutine left after another's Take
	l.drain(t)

	for i := range n {
		id, call := fmt.Sprintf("d%d", i), fmt.Sprintf("c%d", i)
		assert.Equal(t, 1, rowCount(t, j, journal.TypeDecisionRequested, id), id)
		assert.Equal(t, 1, rowCount(t, j, journal.TypeDecisionAnswered, id), id)
		assert.Equal(t, 1, rowCount(t, j, journal.TypeEffectReconciled, call), call)
		assert.Equal(t, 1, settled[id], id)
		assert.Equal(t, 1, settled[decisions.EffectPrefix+call], call)
	}
	assert.Equal(t, 2*n, rowCount(t, j, journal.TypeWarning, ""), "each second answer and verdict is refused")
	assert.False(t, b.Waiting())
	assert.Empty(t, b.Pending())
	for node := range 3 {
		_, held := b.Hold(fmt.Sprintf("n%d", node))
		assert.False(t, held)
	}
	assert.NotNil(t, b.StepGate("executor-t1", "s"), "the tier step was not answered")
}

// TestAStoppedRunTakesNoAnswer: once the host says the run stopped, no answer or verdict is
// journaled or delivered, whoever sends them and however many at once; the Book waits as before.
func TestAStoppedRunTakesNoAnswer(t *testing.T) {
	h := &host{calls: map[string]journal.CallStatus{"c1": journal.StatusUnknown}}
	b, st, j := book(t, h)
	l := &loop{}
	b.SetPost(l.post)
	var mu sync.Mutex
	var got []string
	const n = 30
	for i := range n {
		id := fmt.Sprintf("d%d", i)
		require.NoError(t, b.Decide(crw.Decision{ID: id, Question: "?", Schema: json.RawMessage(okSchema)},
			func(json.RawMessage, error) { mu.Lock(); got = append(got, id); mu.Unlock() }))
	}
	b.EndedUnknown("n", "c1", nil)

	// Half the answers race with the stop; the stop is made while they come.
	var wg sync.WaitGroup
	stopped := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == n/2 {
				h.Stop(errors.New("diverged"))
				close(stopped)
			}
			if i >= n/2 {
				<-stopped
			}
			assert.NoError(t, st.PutAnswer(context.Background(), run, store.Answer{ID: fmt.Sprintf("d%d", i), Value: json.RawMessage(`{"ok":true}`)}))
			b.Take()
		}()
	}
	wg.Wait()
	answered := rowCount(t, j, journal.TypeDecisionAnswered, "")
	mu.Lock()
	assert.Len(t, got, answered, "every answer delivered is journaled")
	mu.Unlock()
	assert.LessOrEqual(t, answered, n/2, "none of the answers sent after the stop is taken")

	// After the stop: nothing is journaled, nothing delivered, nothing released.
	pending := b.Pending()
	for i := range n {
		require.NoError(t, st.PutAnswer(context.Background(), run, store.Answer{ID: fmt.Sprintf("d%d", i), Value: json.RawMessage(`{"ok":true}`)}))
	}
	require.NoError(t, st.PutAnswer(context.Background(), run, store.Answer{ID: "effect/c1", Value: json.RawMessage(`{"verdict":"applied"}`)}))
	b.Take()
	l.drain(t)
	assert.Equal(t, answered, rowCount(t, j, journal.TypeDecisionAnswered, ""), "no answer journaled after the stop")
	assert.Zero(t, rowCount(t, j, journal.TypeEffectReconciled, "c1"), "no verdict journaled after the stop")
	assert.Equal(t, pending, b.Pending())
	holder, held := b.Hold("n")
	assert.True(t, held)
	assert.Equal(t, "c1", holder)
}

// TestHostileAnswersAreWarningsAndChangeNothing: an answer or a verdict that fits nothing the
// run asked, or is too big, too deep, not JSON or not UTF-8, is one warning row, and the Book
// waits as before: the right answer after it is taken.
func TestHostileAnswersAreWarningsAndChangeNothing(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)
	deeper := strings.Repeat("[", 1000) + strings.Repeat("]", 1000) // within encoding/json's limit, past MaxDataDepth
	huge := `{"ok":true,"pad":"` + strings.Repeat("x", decisions.MaxAnswer) + `"}`
	strSchema := `{"type":"object","properties":{"s":{"type":"string"}},"required":["s"],"additionalProperties":false}`
	for _, tc := range []struct {
		name, id, value, reason string
	}{
		{"huge answer", "ship", huge, "answer_refused"},
		{"deep answer", "ship", deep, "answer_refused"},
		{"deep answer in a string's place", "text", `{"s":` + deep + `}`, "answer_refused"},
		{"not JSON", "ship", `yes please`, "answer_refused"},
		{"truncated JSON", "ship", `{"ok":tr`, "answer_refused"},
		{"two documents", "ship", `{"ok":true}{"ok":false}`, "answer_refused"},
		{"invalid UTF-8", "text", "{\"s\":\"\xff\xfe\"}", "answer_refused"},
		{"invalid UTF-8 key", "ship", "{\"ok\":true,\"\xff\":1}", "answer_refused"},
		{"empty value", "ship", ``, "answer_refused"},
		{"null", "ship", `null`, "answer_refused"},
		{"no id", "", `{"ok":true}`, "answer_refused"},
		{"huge id", strings.Repeat("d", 1<<20), `{"ok":true}`, "answer_refused"},
		{"huge call id", "effect/" + strings.Repeat("c", 1<<20), `{"verdict":"applied"}`, "verdict_refused"},
		{"call id with a newline", "effect/c1\n", `{"verdict":"applied"}`, "verdict_refused"},
		{"tier step not asked", "tier-step/x/1", `{"approve":true}`, "answer_refused"},
		{"tier step of another tier", "tier-step/s/2", `{"approve":true}`, "answer_refused"},
		{"tier step's answer not its schema", "tier-step/s/1", `{"approve":"yes"}`, "answer_refused"},
		{"verdict on no call", "effect/c404", `{"verdict":"applied"}`, "verdict_refused"},
		{"verdict on nothing", "effect/", `{"verdict":"applied"}`, "verdict_refused"},
		{"verdict on a call not unknown", "effect/c2", `{"verdict":"applied"}`, "verdict_refused"},
		{"verdict not JSON", "effect/c1", `applied`, "verdict_refused"},
		{"verdict not a verdict", "effect/c1", `{"verdict":"APPLIED"}`, "verdict_refused"},
		{"verdict deep", "effect/c1", `{"verdict":"applied","output":` + deep + `}`, "verdict_refused"},
		{"verdict deeper than an answer may be", "effect/c1", `{"verdict":"applied","output":` + deeper + `}`, "verdict_refused"},
		{"verdict not_applied with an output", "effect/c1", `{"verdict":"not_applied","output":{"ok":true}}`, "verdict_refused"},
		{"verdict huge", "effect/c1", `{"verdict":"applied","output":"` + strings.Repeat("x", decisions.MaxAnswer) + `"}`, "verdict_refused"},
		{"verdict invalid UTF-8", "effect/c1", "{\"verdict\":\"applied\",\"output\":\"\xff\"}", "verdict_refused"},
		{"verdict's output not JSON", "effect/c1", `{"verdict":"applied","output":nope}`, "verdict_refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{calls: map[string]journal.CallStatus{"c1": journal.StatusUnknown, "c2": journal.StatusCompleted}}
			b, st, j := book(t, h)
			var got []string
			for _, id := range []string{"ship", "text"} {
				s := okSchema
				if id == "text" {
					s = strSchema
				}
				require.NoError(t, b.Decide(crw.Decision{ID: id, Question: id + "?", Schema: json.RawMessage(s)},
					func(v json.RawMessage, err error) { got = append(got, string(v)) }))
			}
			b.AskStep("tier-step/s/1")
			key := replay.EffectKey{7}
			b.EndedUnknown("n", "c1", &key)
			require.NoError(t, b.Effect("c1", func(v json.RawMessage, err error) { got = append(got, string(v)) }))
			pending, seq := b.Pending(), j.LastSeq()

			require.NoError(t, st.PutAnswer(context.Background(), run, store.Answer{ID: tc.id, Value: json.RawMessage(tc.value), By: "x"}))
			assert.NotPanics(t, b.Take)

			assert.Equal(t, seq+1, j.LastSeq(), "one row")
			require.NoError(t, j.Sync(j.LastSeq()))
			rows, err := j.Rows()
			require.NoError(t, err)
			last := rows[len(rows)-1]
			assert.Equal(t, journal.TypeWarning, last.Type)
			assert.Equal(t, tc.reason, last.Reason)
			assert.Less(t, len(last.Detail), 4096, "the warning does not carry the answer")
			assert.NotContains(t, last.Detail, "\n")
			assert.Empty(t, got)
			assert.Equal(t, pending, b.Pending())
			holder, held := b.Hold("n")
			assert.Equal(t, "c1", holder)
			assert.True(t, held)
			_, applied := b.AppliedBy(func() replay.EffectKey { return key })
			assert.False(t, applied)
			row := b.StepGate("executor-t1", "s")
			require.NotNil(t, row)
			assert.Equal(t, "missing_step_decision", row.Reason)

			// The right answers are taken after it.
			for _, a := range []store.Answer{{ID: "ship", Value: json.RawMessage(`{"ok":true}`)}, {ID: "text", Value: json.RawMessage(`{"s":"é"}`)},
				{ID: "tier-step/s/1", Value: json.RawMessage(`{"approve":true}`)}, {ID: "effect/c1", Value: json.RawMessage(`{"verdict":"applied","output":{"done":1}}`)}} {
				require.NoError(t, st.PutAnswer(context.Background(), run, a))
			}
			b.Take()
			assert.Equal(t, []string{`{"ok":true}`, `{"s":"é"}`}, got)
			assert.Empty(t, b.Pending()[:len(b.Pending())-1], "only the verdict's wait is left for the script's loop")
			_, held = b.Hold("n")
			assert.False(t, held)
			assert.Nil(t, b.StepGate("executor-t1", "s"))
		})
	}
}

// TestAStoppedRunLeavesItsAnswersForTheNextProcess: a process that stopped does not take the
// answers left for the run: taken, they would be dropped (it writes nothing more), and the
// process that resumes the run would never see them.
func TestAStoppedRunLeavesItsAnswersForTheNextProcess(t *testing.T) {
	h := &host{calls: map[string]journal.CallStatus{"c1": journal.StatusUnknown}}
	_, _, j := book(t, h)
	taken := 0
	b := decisions.New(decisions.Config{Run: run, Replay: replay.New(nil, replay.Strict, nil), Journal: j, Host: h,
		TakeAnswers: func() ([]store.Answer, error) {
			taken++
			return []store.Answer{{ID: "ship", Value: json.RawMessage(`{"ok":true}`)}}, nil
		}})
	require.NoError(t, b.Decide(crw.Decision{ID: "ship", Question: "Ship?", Schema: json.RawMessage(okSchema)}, func(json.RawMessage, error) {}))
	b.EndedUnknown("n", "c1", nil)
	h.Stop(errors.New("lease lost"))
	b.Take()
	assert.Zero(t, taken, "the answers are left in the store")
	assert.Equal(t, []journal.PendingDecision{{ID: "ship", Question: "Ship?"}}, b.Pending())
}

// TestAStopBetweenTakingAndAnsweringJournalsNothing: the run stops while its answers are being
// taken: none of them is journaled or delivered, and nothing waiting is released.
func TestAStopBetweenTakingAndAnsweringJournalsNothing(t *testing.T) {
	h := &host{calls: map[string]journal.CallStatus{"c1": journal.StatusUnknown}}
	_, _, j := book(t, h)
	b := decisions.New(decisions.Config{Run: run, Replay: replay.New(nil, replay.Strict, nil), Journal: j, Host: h,
		TakeAnswers: func() ([]store.Answer, error) {
			h.Stop(errors.New("lease lost"))
			return []store.Answer{{ID: "ship", Value: json.RawMessage(`{"ok":true}`)}, {ID: "effect/c1", Value: json.RawMessage(`{"verdict":"applied"}`)}}, nil
		}})
	var got []string
	require.NoError(t, b.Decide(crw.Decision{ID: "ship", Question: "Ship?", Schema: json.RawMessage(okSchema)},
		func(v json.RawMessage, err error) { got = append(got, string(v)) }))
	b.EndedUnknown("n", "c1", nil)
	b.Take()
	assert.Equal(t, []string{"decision_requested/ship"}, rowsOf(t, j))
	assert.Empty(t, got)
	assert.Equal(t, []journal.PendingDecision{{ID: "ship", Question: "Ship?"}}, b.Pending())
	_, held := b.Hold("n")
	assert.True(t, held)
}
