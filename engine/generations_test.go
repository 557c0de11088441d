package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/timeline"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// A call's generation is its rows from a prepared row on; each has at most one terminal row. The
// tests here pause a real run with a rate limit of the fake backend, then resume it with scripts
// that leave the held call and take it up again.

// generationsWorkflow makes the calls a and b; writeWorkflow makes it make only a.
const generationsWorkflow = `import { agent } from "crw:agent";

export default async function main() {
  const a = await agent.call({ role: "explorer", node: "a", prompt: "first" });
  if (false) {
    return { a: a.reason };
  }
  const b = await agent.call({ role: "explorer", node: "b", prompt: "second" });
  return { a: a.output ?? a.reason, b: b.output ?? b.reason };
}
`

// generationsRun is a run of generationsWorkflow whose first process ended paused: a hit the
// rate limit (held host_infra_rate) and b, issued after the pause, was held engine_paused. It
// returns the run, the workflow's file and the answers file, which the tests rewrite between
// resumes.
func generationsRun(t *testing.T, svc *engine.Service) (id, wf, answers string) {
	t.Helper()
	root := t.TempDir()
	wf = filepath.Join(root, "wf.js")
	answers = filepath.Join(root, "answers.json")
	require.NoError(t, os.WriteFile(wf, []byte(generationsWorkflow), 0o644))
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [{"match": {"node": "a"}, "turns": [{"error": "rateLimitExceeded"}]}]}`), 0o644))
	ctx := context.Background()
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, BackendOpts: map[string]string{"answers": answers}})
	require.NoError(t, err)
	res, rows := durableResume(t, svc, id)
	require.Equal(t, store.RunPaused, res.Status, "%+v", res.Error)
	assert.JSONEq(t, `{"a": "host_infra_rate", "b": "engine_paused"}`, string(res.Result))
	b := enginetest.CallRows(rows, "c2")
	require.Equal(t, []string{journal.TypePrepared, journal.TypeHeld}, enginetest.Types(b))
	assert.Equal(t, "engine_paused", b[1].Reason)
	return id, wf, answers
}

// writeWorkflow rewrites the run's workflow for its next resume: with aOnly, it no longer makes
// the call b.
func writeWorkflow(t *testing.T, wf string, aOnly bool) {
	t.Helper()
	src := generationsWorkflow
	if aOnly {
		src = strings.Replace(src, "if (false)", "if (true)", 1)
	}
	require.NoError(t, os.WriteFile(wf, []byte(src), 0o644))
}

// TestHeldCallKeepsItsTerminalRow: a resume whose script no longer makes the held call b leaves
// b as it was, held engine_paused, with no second terminal row; a later resume whose script makes
// b again prepares it again (a new generation), which ends with a terminal row of its own.
func TestHeldCallKeepsItsTerminalRow(t *testing.T) {
	t.Parallel()
	for name, svc := range services(t) {
		t.Run(name, func(t *testing.T) { testHeldCallKeepsItsTerminalRow(t, svc) })
	}
}

func testHeldCallKeepsItsTerminalRow(t *testing.T, svc *engine.Service) {
	id, wf, answers := generationsRun(t, svc)

	// Resume 1: the script makes only a, which hits the rate limit again.
	writeWorkflow(t, wf, true)
	res, rows := durableResume(t, svc, id)
	require.Equal(t, store.RunPaused, res.Status, "%+v", res.Error)
	assert.JSONEq(t, `{"a": "host_infra_rate"}`, string(res.Result))
	b := enginetest.CallRows(rows, "c2")
	require.Equal(t, []string{journal.TypePrepared, journal.TypeHeld}, enginetest.Types(b), "b keeps its one terminal row")
	assert.Equal(t, "engine_paused", b[1].Reason)
	assert.Equal(t, []string{
		journal.TypePrepared, journal.TypeThreadStarted, journal.TypeTurnStarted, journal.TypeEscalation, journal.TypeHeld,
		journal.TypePrepared, journal.TypeThreadStarted, journal.TypeTurnStarted, journal.TypeEscalation, journal.TypeHeld,
	}, enginetest.Types(enginetest.CallRows(rows, "c1")), "a was prepared again and held again")
	// What the process published counts b as the journal does.
	assert.Equal(t, store.Counts{"held": 2}, res.Calls)
	s := timeline.Summarize(rows)
	assert.Equal(t, store.Counts{"held": 2}, s.Counts)
	require.Len(t, s.Calls, 2)
	assert.Equal(t, journal.CallStatus("held"), s.Calls[1].Status)
	assert.Equal(t, "engine_paused", s.Calls[1].Reason)
	assert.Equal(t, 1, s.Calls[1].Attempts)

	// Resume 2: the limit has passed and the script makes b again.
	writeWorkflow(t, wf, false)
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [
  {"match": {"node": "a"}, "turns": [{"text": "A"}]},
  {"match": {"node": "b"}, "turns": [{"text": "B"}]}
]}`), 0o644))
	res, rows = durableResume(t, svc, id)
	require.Equal(t, store.RunCompleted, res.Status, "%+v", res.Error)
	assert.JSONEq(t, `{"a": "A", "b": "B"}`, string(res.Result))
	b = enginetest.CallRows(rows, "c2")
	require.Len(t, b, 6)
	assert.Equal(t, journal.TypePrepared, b[0].Type)
	assert.Equal(t, 2, b[0].Index)
	assert.Equal(t, journal.TypeHeld, b[1].Type)
	assert.Equal(t, "engine_paused", b[1].Reason)
	// The new generation: prepared again, under the same id and at the same position.
	assert.Equal(t, journal.TypePrepared, b[2].Type)
	assert.Equal(t, 2, b[2].Index)
	assert.Equal(t, b[0].InputDigest, b[2].InputDigest)
	assert.Equal(t, journal.TypeThreadStarted, b[3].Type)
	assert.Equal(t, "fake-c2-a2", b[3].ThreadID)
	assert.Equal(t, journal.TypeTurnStarted, b[4].Type)
	assert.Equal(t, "fake-c2-a2-t1", b[4].TurnID)
	assert.Equal(t, journal.TypeCompleted, b[5].Type)
	assert.JSONEq(t, `"B"`, string(b[5].Output))
	assert.Empty(t, enginetest.OfType(rows, journal.TypeSuperseded), "nothing is superseded")

	// show reports the newest generation of each call.
	s = timeline.Summarize(rows)
	assert.Equal(t, store.Counts{"completed": 2}, s.Counts)
	require.Len(t, s.Calls, 2)
	assert.Equal(t, journal.CallStatus("completed"), s.Calls[1].Status)
	assert.Equal(t, 2, s.Calls[1].Attempts)
	assert.Equal(t, b[2].Seq, s.Calls[1].StartSeq)
	assert.Equal(t, b[5].Seq, s.Calls[1].EndSeq)
	assert.Equal(t, 3, s.Calls[0].Attempts)
}

// TestCancelOfAPausedRunKeepsHeldCalls: a paused run that no process holds is cancelled; its
// calls that a pause held keep their held rows (they have their terminal row), and nothing else
// is written for them.
func TestCancelOfAPausedRunKeepsHeldCalls(t *testing.T) {
	t.Parallel()
	for name, svc := range services(t) {
		t.Run(name, func(t *testing.T) {
			id, _, _ := generationsRun(t, svc)
			ctx := context.Background()
			st, err := svc.Cancel(ctx, id, 0)
			require.NoError(t, err)
			assert.Equal(t, store.RunCancelled, st.Status)
			rows, err := svc.Rows(ctx, id)
			require.NoError(t, err)
			enginetest.CheckJournal(t, rows)
			for _, call := range []string{"c1", "c2"} {
				types := enginetest.Types(enginetest.CallRows(rows, call))
				assert.Equal(t, journal.TypeHeld, types[len(types)-1], call)
				assert.Len(t, enginetest.OfType(enginetest.CallRows(rows, call), journal.TypeHeld), 1, call)
			}
			last := rows[len(rows)-1]
			assert.Equal(t, journal.TypeEnded, last.Type)
			assert.Equal(t, string(store.RunCancelled), last.Status)
		})
	}
}

// TestInterruptedCallKeepsItsTerminalRow: a call in flight when a rate limit paused the run was
// interrupted and ended held engine_paused; a resume whose script no longer makes it writes
// nothing more for it.
func TestInterruptedCallKeepsItsTerminalRow(t *testing.T) {
	t.Parallel()
	svc, _ := enginetest.LocalService(t)
	root := t.TempDir()
	wf := filepath.Join(root, "wf.js")
	answers := filepath.Join(root, "answers.json")
	both := `import { agent } from "crw:agent";

export default async function main() {
  const [a, slow] = await Promise.all([
    agent.call({ role: "explorer", node: "a", prompt: "first" }),
    agent.call({ role: "explorer", node: "slow", prompt: "slow" }),
  ]);
  return [a.output ?? a.reason, slow.reason];
}
`
	require.NoError(t, os.WriteFile(wf, []byte(both), 0o644))
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [
  {"match": {"node": "a"}, "turns": [{"error": "rateLimitExceeded", "delay_ms": 100}]},
  {"match": {"node": "slow"}, "turns": [{"text": "late", "delay_ms": 30000}]}
]}`), 0o644))
	ctx := context.Background()
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, BackendOpts: map[string]string{"answers": answers}})
	require.NoError(t, err)
	res, rows := durableResume(t, svc, id)
	require.Equal(t, store.RunPaused, res.Status, "%+v", res.Error)
	assert.JSONEq(t, `["host_infra_rate", "engine_paused"]`, string(res.Result))
	slow := []string{journal.TypePrepared, journal.TypeThreadStarted, journal.TypeTurnStarted, journal.TypeInterruptRequested, journal.TypeHeld}
	require.Equal(t, slow, enginetest.Types(enginetest.CallRows(rows, "c2")))

	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";

export default async function main() {
  const a = await agent.call({ role: "explorer", node: "a", prompt: "first" });
  return [a.output];
}
`), 0o644))
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [{"match": {"node": "a"}, "turns": [{"text": "A"}]}]}`), 0o644))
	res, rows = durableResume(t, svc, id)
	require.Equal(t, store.RunCompleted, res.Status, "%+v", res.Error)
	assert.JSONEq(t, `["A"]`, string(res.Result))
	c2 := enginetest.CallRows(rows, "c2")
	assert.Equal(t, slow, enginetest.Types(c2), "the interrupted call keeps its one terminal row")
	assert.Equal(t, "engine_paused", c2[4].Reason)
	assert.Equal(t, store.Counts{"completed": 1, "held": 1}, res.Calls)
	assert.Equal(t, store.Counts{"completed": 1, "held": 1}, timeline.Summarize(rows).Counts)
}
