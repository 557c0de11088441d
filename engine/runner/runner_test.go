package runner_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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

const run = "20261204-130000-a1b2c3"

// workflow asks two nodes in turn, each for an answer to a schema, and returns both.
const workflow = `
import { agent } from "crw:agent";
const schema = { type: "object", properties: { v: { type: "string" } }, required: ["v"], additionalProperties: false };
export default async function main() {
  const a = await agent.call({ role: "explorer", node: "a", prompt: "first", schema });
  const b = await agent.call({ role: "explorer", node: "b", prompt: "second", schema });
  return [a.status, a.output && a.output.v, b.status, b.reason, b.output && b.output.v];
}
`

func newRun(t *testing.T) (*mem.Store, *store.Spec) {
	t.Helper()
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(workflow), 0o600))
	st := mem.New()
	spec := &store.Spec{Schema: store.SpecSchema, Run: run, Workflow: wf, Backend: fake.Name, Pool: 2, Input: json.RawMessage("null"),
		CreatedAt: time.Now().UTC()}
	require.NoError(t, st.Create(context.Background(), spec))
	return st, spec
}

// process runs one process of the run on the fake backend with these answers, as the engine's
// Execute does: on the run's lease, over the History its journal reads to.
func process(t *testing.T, st *mem.Store, spec *store.Spec, answers string) *store.Status {
	t.Helper()
	a, err := fake.ParseAnswers("answers.json", []byte(answers))
	require.NoError(t, err)
	lease, err := st.Acquire(context.Background(), run)
	require.NoError(t, err)
	defer lease.Release()
	j := lease.Journal()
	h, err := replay.ReadPages(func(from uint64, limit int, fn func(*journal.Row) error) error { return j.Each(from, limit, fn) })
	require.NoError(t, err)
	end, err := runner.Run(context.Background(), runner.Config{Spec: spec, Lease: lease, Backend: fake.New(a, fake.NewHost("")), History: h})
	require.NoError(t, err)
	return end
}

func types(t *testing.T, st *mem.Store, call string) []string {
	t.Helper()
	var out []string
	require.NoError(t, st.Rows(context.Background(), run, 1, func(r *journal.Row) error {
		if r.Call == call {
			out = append(out, r.Type)
		}
		return nil
	}))
	return out
}

// TestAPausedRunGoesOnFromWhereItStopped: the host's usage limit holds the second call and
// pauses the run; the next process replays the first call from the journal (no turn sent
// again) and runs the second again, with the host's new answer.
func TestAPausedRunGoesOnFromWhereItStopped(t *testing.T) {
	st, spec := newRun(t)
	end := process(t, st, spec, `{"answers": [
  {"match": {"node": "a"}, "turns": [{"text": "{\"v\": \"x\"}"}]},
  {"match": {"node": "b"}, "turns": [{"error": "usageLimitExceeded"}]}]}`)
	assert.Equal(t, store.RunPaused, end.Status)
	assert.Equal(t, []string{journal.TypePrepared, journal.TypeThreadStarted, journal.TypeTurnStarted, journal.TypeCompleted}, types(t, st, "c1"))
	assert.Equal(t, []string{journal.TypePrepared, journal.TypeThreadStarted, journal.TypeTurnStarted, journal.TypeEscalation, journal.TypeHeld},
		types(t, st, "c2"), "the pause is escalated to the owner before the call ends held")

	// The first call's answer is not in these answers: had it been sent again, it would have
	// been synthesized, and the result would differ.
	end = process(t, st, spec, `{"answers": [{"match": {"node": "b"}, "turns": [{"text": "{\"v\": \"y\"}"}]}]}`)
	require.Equal(t, store.RunCompleted, end.Status)
	assert.JSONEq(t, `["completed", "x", "completed", null, "y"]`, string(end.Result))
	assert.Equal(t, []string{journal.TypePrepared, journal.TypeThreadStarted, journal.TypeTurnStarted, journal.TypeCompleted}, types(t, st, "c1"),
		"the first call is replayed, not run again")
	assert.Equal(t, []string{journal.TypePrepared, journal.TypeThreadStarted, journal.TypeTurnStarted, journal.TypeEscalation, journal.TypeHeld,
		journal.TypePrepared, journal.TypeThreadStarted, journal.TypeTurnStarted, journal.TypeCompleted}, types(t, st, "c2"),
		"the held call's next attempt")
}

// TestAnAnswerRepairedOnce: an answer that does not satisfy the schema gets one repair turn;
// a second wrong answer ends the call null_model, schema_invalid_after_repair.
func TestAnAnswerRepairedOnce(t *testing.T) {
	st, spec := newRun(t)
	end := process(t, st, spec, `{"answers": [
  {"match": {"node": "a"}, "turns": [{"text": "{\"w\": 1}"}, {"text": "{\"v\": \"fixed\"}"}]},
  {"match": {"node": "b"}, "turns": [{"text": "nothing"}, {"text": "{\"v\": 2}"}]}]}`)
	require.Equal(t, store.RunCompleted, end.Status)
	assert.JSONEq(t, `["completed", "fixed", "null_model", "schema_invalid_after_repair", null]`, string(end.Result))
	assert.Equal(t, []string{journal.TypePrepared, journal.TypeThreadStarted, journal.TypeTurnStarted, journal.TypeTurnStarted, journal.TypeNullModel},
		types(t, st, "c2"))
}
