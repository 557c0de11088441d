package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/enginetest"
	"github.com/crw-dev/crw/engine/fake"
	"github.com/crw-dev/crw/store"
)

// TestStatusOfARunWhoseProcessIsLettingItGo: between the ended row and the release of its lock,
// a run's process still holds it, having published that it ended; status says ended, with the
// journal's result, not running (which crw flow next read as starting).
func TestStatusOfARunWhoseProcessIsLettingItGo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`export default async function main() { return "done"; }`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
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
