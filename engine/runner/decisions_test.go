package runner_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/runner"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

// newRunOf is newRun with a workflow of the test's.
func newRunOf(t *testing.T, script string) (*mem.Store, *store.Spec) {
	t.Helper()
	st, spec := newRun(t)
	require.NoError(t, os.WriteFile(spec.Workflow, []byte(script), 0o600))
	return st, spec
}

// started runs one process of the run in the background, as process does; its end comes on
// the channel.
func started(t *testing.T, st *mem.Store, spec *store.Spec, answers string) <-chan *store.Status {
	t.Helper()
	a, err := fake.ParseAnswers("answers.json", []byte(answers))
	require.NoError(t, err)
	lease, err := st.Acquire(context.Background(), run)
	require.NoError(t, err)
	j := lease.Journal()
	h, err := replay.ReadPages(func(from uint64, limit int, fn func(*journal.Row) error) error { return j.Each(from, limit, fn) })
	require.NoError(t, err)
	done := make(chan *store.Status, 1)
	go func() {
		end, err := runner.Run(context.Background(), runner.Config{Spec: spec, Lease: lease, Backend: fake.New(a, fake.NewHost("")), History: h})
		assert.NoError(t, err)
		// Let go before the end is told: the next process the test starts at once takes the run.
		assert.NoError(t, lease.Release())
		done <- end
	}()
	return done
}

// entry is a row as these tests compare them: its type, and its call or decision and reason.
func entry(r *journal.Row) string {
	return strings.Join(slices.DeleteFunc([]string{r.Type, r.Call + r.DecisionID + r.Effect, r.Reason}, func(s string) bool { return s == "" }), " ")
}

// entries are the run's durable rows, as entry writes them.
func entries(t *testing.T, st *mem.Store) []string {
	t.Helper()
	var out []string
	require.NoError(t, st.Rows(context.Background(), run, 1, func(r *journal.Row) error {
		out = append(out, entry(r))
		return nil
	}))
	return out
}

// waitRow waits until the run has a durable row that entry writes as want.
func waitRow(t *testing.T, st *mem.Store, want string) {
	t.Helper()
	require.Eventually(t, func() bool { return slices.Contains(entries(t, st), want) }, 20*time.Second, 5*time.Millisecond,
		"no row %q came", want)
}

// inOrder asserts that each row is in rows once, in this order.
func inOrder(t *testing.T, rows []string, want ...string) {
	t.Helper()
	at := -1
	for _, w := range want {
		n := 0
		for _, r := range rows {
			if r == w {
				n++
			}
		}
		require.Equal(t, 1, n, "%q in %q", w, rows)
		i := slices.Index(rows, w)
		assert.Greater(t, i, at, "%q after %q in %q", w, want, rows)
		at = i
	}
}

const okSchema = `{ type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false }`

// decideInFlight asks a decision while a call is in flight, and once it is answered makes a
// call a rate limit holds: the run pauses, and the call in flight is interrupted.
const decideInFlight = `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const slow = agent.call({ role: "explorer", node: "slow", prompt: "slow" });
  const d = await crw.decide({ id: "go", question: "Go on?", schema: ` + okSchema + ` });
  const lim = await agent.call({ role: "explorer", node: "lim", prompt: "lim" });
  const s = await slow;
  return [d.ok, lim.status, s.status];
}
`

// TestAnAnswerWhileCallsAreInFlightAndThenAPause: the answer given while the process runs is
// journaled by it, once, between its question and the calls after it; the rate limit that
// follows pauses the run and holds the call in flight; the resume replays the answer (no
// question or answer again) and runs the held calls again.
func TestAnAnswerWhileCallsAreInFlightAndThenAPause(t *testing.T) {
	t.Parallel()
	st, spec := newRunOf(t, decideInFlight)
	done := started(t, st, spec, `{"answers": [
  {"match": {"node": "slow"}, "turns": [{"text": "late", "delay_ms": 600000}]},
  {"match": {"node": "lim"}, "turns": [{"error": "rateLimitExceeded"}]}]}`)
	waitRow(t, st, "decision_requested go")
	waitRow(t, st, "turn_started c1")
	require.NoError(t, st.PutAnswer(context.Background(), run, store.Answer{ID: "go", Value: json.RawMessage(`{"ok": true}`), By: "owner"}))
	require.NoError(t, st.PutAnswer(context.Background(), run, store.Answer{ID: "go", Value: json.RawMessage(`{"ok": false}`), By: "other"}))
	end := <-done
	require.Equal(t, store.RunPaused, end.Status, "%+v", end.Error)
	rows := entries(t, st)
	inOrder(t, rows, "started", "prepared c1", "decision_requested go", "decision_answered go",
		"prepared c2", "escalation c2 quota_or_rate", "interrupt_requested c1 engine_paused", "held c1 engine_paused", "ended")
	inOrder(t, rows, "escalation c2 quota_or_rate", "held c2 host_infra_rate", "ended")
	// The second answer is refused once the first was taken: whether before or after the
	// script, given the first, made its next call is the machine's timing.
	inOrder(t, rows, "decision_answered go", "warning go answer_refused", "ended")

	end = <-started(t, st, spec, `{"answers": [{"match": {"node": "slow"}, "turns": [{"text": "s"}]}, {"match": {"node": "lim"}, "turns": [{"text": "l"}]}]}`)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `[true, "completed", "completed"]`, string(end.Result))
	rows = entries(t, st)
	for typ, n := range map[string]int{"decision_requested go": 1, "decision_answered go": 1, "warning go answer_refused": 1, "started": 2, "ended": 2,
		"completed c1": 1, "completed c2": 1, "held c1 engine_paused": 1, "held c2 host_infra_rate": 1} {
		assert.Equal(t, n, count(rows, typ), "%s in %q", typ, rows)
	}
	var answered *journal.Row
	require.NoError(t, st.Rows(context.Background(), run, 1, func(r *journal.Row) error {
		if r.Type == journal.TypeDecisionAnswered {
			cp := *r // the row is the reader's, reused
			answered = &cp
		}
		return nil
	}))
	require.NotNil(t, answered)
	assert.Equal(t, "owner", answered.By, "the first answer is taken")
	assert.JSONEq(t, `{"ok":true}`, string(answered.Output))
}

func count(rows []string, want string) int {
	n := 0
	for _, r := range rows {
		if r == want {
			n++
		}
	}
	return n
}

// decideWhileSlow waits for a decision while a call is in flight.
const decideWhileSlow = `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const slow = agent.call({ role: "explorer", node: "slow", prompt: "slow" });
  const d = await crw.decide({ id: "go", question: "Go on?", schema: ` + okSchema + ` });
  return [d.ok, (await slow).status];
}
`

// TestACancelWhileADecisionWaits: the run is cancelled while its script waits for a decision
// and a call is in flight: the call ends held cancelled, the run cancelled, the decision is
// never answered, and an answer left afterwards is taken by nobody.
func TestACancelWhileADecisionWaits(t *testing.T) {
	t.Parallel()
	st, spec := newRunOf(t, decideWhileSlow)
	done := started(t, st, spec, `{"answers": [{"match": {"node": "slow"}, "turns": [{"text": "late", "delay_ms": 600000}]}]}`)
	waitRow(t, st, "decision_requested go")
	require.NoError(t, st.RequestCancel(context.Background(), run))
	end := <-done
	require.Equal(t, store.RunCancelled, end.Status, "%+v", end.Error)
	require.NoError(t, st.PutAnswer(context.Background(), run, store.Answer{ID: "go", Value: json.RawMessage(`{"ok": true}`)}))
	rows := entries(t, st)
	inOrder(t, rows, "started", "decision_requested go", "interrupt_requested c1 cancelled", "held c1 cancelled", "ended")
	assert.Zero(t, count(rows, "decision_answered go"))
	assert.Equal(t, "ended", rows[len(rows)-1])
}
