package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// TestStatusOfARunWhoseProcessIsLettingItGo: between the ended row and the release of its lock,
// a run's process still holds it, having published that it ended; status says ended, with the
// journal's result, not running (which crw flow next read as starting).
func TestStatusOfARunWhoseProcessIsLettingItGo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, id := enginetest.Created(t, `export default async function main() { return "done"; }`)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status)

	lease, err := svc.Store.Acquire(ctx, id) // the process, still holding the run
	require.NoError(t, err)
	defer lease.Release()
	lease.Publish(&store.Status{Run: id, State: store.StateEnded, Status: store.RunCompleted})
	st, err := svc.Status(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, store.StateEnded, st.State)
	assert.Equal(t, store.RunCompleted, st.Status)
	assert.JSONEq(t, `"done"`, string(st.Result))

	lease.Publish(&store.Status{Run: id, State: store.StateRunning, LastSeq: 7})
	st, err = svc.Status(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, store.StateRunning, st.State, "a process that publishes it runs holds it")
}

// TestStatusOfAPausedRunWhoseProcessIsLettingItGo: the same for a process that ended its run
// paused (its ended row written, the run's result in it): status says paused with the journal's
// result while the process still holds the run, as once it has let it go. A live process
// that publishes paused (its calls draining) has no run status yet, and holds the run.
func TestStatusOfAPausedRunWhoseProcessIsLettingItGo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() {
  const r = await agent.call({ role: "explorer", prompt: "look" });
  return { outcome: "held", reason: r.reason };
}`), 0o644))
	answers, err := fake.ParseAnswers("answers.json", []byte(`{"answers": [{"match": {"call": 1}, "turns": [{"error": "rateLimitExceeded"}]}]}`))
	require.NoError(t, err)
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(answers, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunPaused, end.Status)

	lease, err := svc.Store.Acquire(ctx, id) // the process, still holding the run
	require.NoError(t, err)
	defer lease.Release()
	lease.Publish(&store.Status{Run: id, State: store.StatePaused, Status: store.RunPaused, Result: end.Result})
	st, err := svc.Status(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, store.StatePaused, st.State)
	assert.Equal(t, store.RunPaused, st.Status)
	assert.JSONEq(t, `{"outcome": "held", "reason": "host_infra_rate"}`, string(st.Result))

	lease.Publish(&store.Status{Run: id, State: store.StatePaused, LastSeq: 7})
	st, err = svc.Status(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, store.StatePaused, st.State)
	assert.Equal(t, uint64(7), st.LastSeq, "a live process's own account")
}

// TestAStartedRowWithoutBackendIsAnAppServerRun: seed 003, a run whose started row records no
// backend is an App Server run: a resume on the fake backend is refused before any row.
func TestAStartedRowWithoutBackendIsAnAppServerRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`export default async function main() { return "done"; }`), 0o644))
	// The started row of a run of the same spec, its backend taken out.
	first, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	_, err = svc.Execute(ctx, first, engine.ExecOptions{})
	require.NoError(t, err)
	rows, err := svc.Rows(ctx, first)
	require.NoError(t, err)
	started := rows[0]
	require.Equal(t, journal.TypeStarted, started.Type)
	require.Equal(t, "fake", started.Backend)

	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	started.Seq, started.Run, started.Backend = 0, id, ""
	lease, err := svc.Store.Acquire(ctx, id)
	require.NoError(t, err)
	_, err = lease.Journal().Write(&started)
	require.NoError(t, err)
	require.NoError(t, lease.Release())

	_, err = svc.Execute(ctx, id, engine.ExecOptions{})
	require.Error(t, err)
	assert.Equal(t, errs.InvalidRequest, errs.CodeOf(err))
	assert.Contains(t, err.Error(), "ran on backend app-server; it cannot resume on fake")
	rows, err = svc.Rows(ctx, id)
	require.NoError(t, err)
	assert.Len(t, rows, 1, "nothing written")
}
