package pulltest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/appserver"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/internal/pulltest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// run runs a workflow on a session's pull backend and returns its end and journal; started,
// when not nil, is called once the run has started.
func run(t *testing.T, s *pulltest.Session, ctx context.Context, workflow string, started func(*engine.Service, string), repo ...string) (*store.Status, []journal.Row) {
	t.Helper()
	svc, _ := enginetest.LocalService(t)
	svc.Backends = backend.NewRegistry(fake.Descriptor(), appserver.Descriptor(), s.Descriptor())
	var x engine.ExecOptions
	if started != nil {
		x.OnStart = func(id string) { started(svc, id) }
	}
	co := engine.CreateOptions{Workflow: workflow, Backend: pulltest.Name}
	if len(repo) > 0 {
		co.Repo = repo[0]
	}
	res, err := svc.Run(ctx, co, x)
	require.NoError(t, err)
	rows, err := svc.Rows(context.Background(), res.Run)
	require.NoError(t, err)
	return res, rows
}

func answersFile(t *testing.T, name string) (*fake.Answers, string) {
	t.Helper()
	path := filepath.Join("..", "..", "testdata", "answers", name)
	a, err := fake.LoadAnswers(path)
	require.NoError(t, err)
	return a, path
}

// TestShippedWorkflowsThroughAPullBackend: the shipped workflows, run on a backend of the pull
// kind, end exactly as on the fake backend, and every turn goes through the pull cycle: the
// step is journaled (and committed) before the owner can take it, the bind is journaled as the
// call's thread and turn, the answer is harvested, and the subagent is closed when the call is
// done.
func TestShippedWorkflowsThroughAPullBackend(t *testing.T) {
	for _, tc := range []struct{ workflow, answers string }{
		{"plan-build-review.js", "plan-build-review.json"},
		{"triage.ts", "triage.json"},
	} {
		t.Run(tc.workflow, func(t *testing.T) {
			t.Parallel()
			wf := filepath.Join("..", "..", "workflows", tc.workflow)
			a, path := answersFile(t, tc.answers)
			svc, _ := enginetest.LocalService(t)
			repo := enginetest.GitRepo(t, map[string]string{"README.md": "# the project\n"})
			onFake, err := svc.Run(context.Background(), engine.CreateOptions{Workflow: wf, BackendOpts: map[string]string{"answers": path}, Repo: repo}, engine.ExecOptions{})
			require.NoError(t, err)
			require.Equal(t, store.RunCompleted, onFake.Status)

			s := pulltest.NewSession(a, nil)
			defer s.Stop()
			// The executors work in worktrees of the run's repository.
			res, rows := run(t, s, context.Background(), wf, nil, enginetest.GitRepo(t, map[string]string{"README.md": "# the project\n"}))
			require.Equal(t, store.RunCompleted, res.Status, "%+v", res.Error)
			assert.JSONEq(t, string(onFake.Result), string(res.Result))
			assert.Equal(t, onFake.Calls, res.Calls)
			assert.Equal(t, pulltest.Name, rows[0].Backend)

			turns := 0
			for _, p := range enginetest.OfType(rows, journal.TypePrepared) {
				callRows := enginetest.CallRows(rows, p.Call)
				types := enginetest.Types(callRows)
				if len(types) > 1 && types[1] == journal.TypeWorkspacePlaced {
					callRows = append(callRows[:1:1], callRows[2:]...)
					types = enginetest.Types(callRows)
				}
				require.GreaterOrEqual(t, len(types), 5, "call %s: %v", p.Call, types)
				assert.Equal(t, []string{"prepared", "step_published", "thread_started", "turn_started"}, types[:4], "call %s", p.Call)
				step, thread := callRows[1], callRows[2]
				assert.Equal(t, p.Call+"/t1-a1", step.Marker)
				assert.Equal(t, 1, step.K)
				assert.Equal(t, "fake-"+p.Call, thread.ThreadID, "the subagent the owner bound")
				assert.True(t, s.Closed(thread.ThreadID), "call %s: its subagent was closed", p.Call)
				turns += enginetest.Count(callRows, p.Call, journal.TypeStepPublished)
			}
			assert.Equal(t, turns, s.Published(), "one step per turn, none published twice")
			assert.Empty(t, s.Waiting())
		})
	}
}

// TestPullRepairGoesToTheOpenSubagent: the repair turn is a step for the call's subagent, bound
// to the same thread.
func TestPullRepairGoesToTheOpenSubagent(t *testing.T) {
	t.Parallel()
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() {
  const S = { type: "object", additionalProperties: false, required: ["n"], properties: { n: { type: "integer" } } };
  const r = await agent.call({ role: "critic", node: "fix", prompt: "count", schema: S });
  return [r.status, r.output, r.meta.repairUsed];
}
`), 0o600))
	a, err := fake.ParseAnswers("answers.json", []byte(`{"answers": [{"match": {"node": "fix"}, "turns": [{"text": "nope"}, {"json": {"n": 3}}]}]}`))
	require.NoError(t, err)
	s := pulltest.NewSession(a, nil)
	defer s.Stop()
	res, rows := run(t, s, context.Background(), wf, nil)
	assert.JSONEq(t, `["completed", {"n": 3}, true]`, string(res.Result))
	assert.Equal(t, []string{"prepared", "step_published", "thread_started", "turn_started", "step_published", "turn_started", "completed"},
		enginetest.Types(enginetest.CallRows(rows, "c1")))
	steps := enginetest.OfType(rows, journal.TypeStepPublished)
	assert.Equal(t, "c1/t2-a1", steps[1].Marker)
	turns := enginetest.OfType(rows, journal.TypeTurnStarted)
	assert.Equal(t, []string{"fake-c1-t1", "fake-c1-t2"}, []string{turns[0].TurnID, turns[1].TurnID}, "both turns on the one subagent")
	assert.NotEmpty(t, turns[1].Repair, "the repair names what was wrong")
}

// TestPullRetractsAStepNobodyTook: a cancelled run retracts the step the owner had not taken:
// the call ends held cancelled with no thread, and nothing is left waiting on the bus.
func TestPullRetractsAStepNobodyTook(t *testing.T) {
	t.Parallel()
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() {
  const [a, b] = await Promise.all([
    agent.call({ role: "explorer", node: "quick", prompt: "a" }),
    agent.call({ role: "explorer", node: "slow", prompt: "b" }),
  ]);
  return [a.status, b.status];
}
`), 0o600))
	s := pulltest.NewSession(nil, nil)
	defer s.Stop()
	s.Hold("slow")
	res, rows := run(t, s, context.Background(), wf, func(svc *engine.Service, id string) {
		go func() {
			for len(s.Waiting()) == 0 {
				time.Sleep(time.Millisecond)
			}
			assert.NoError(t, svc.Store.RequestCancel(context.Background(), id))
		}()
	})
	assert.Equal(t, store.RunCancelled, res.Status)
	var slow string
	for _, p := range enginetest.OfType(rows, journal.TypePrepared) {
		if p.Node == "slow" {
			slow = p.Call
		}
	}
	assert.Equal(t, []string{"prepared", "step_published", "interrupt_requested", "held"}, enginetest.Types(enginetest.CallRows(rows, slow)))
	assert.Equal(t, "cancelled", enginetest.Terminal(t, rows, slow).Reason)
	assert.Empty(t, s.Waiting(), "the step was retracted")
}
