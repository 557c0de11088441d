package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/diagnosis"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/store"
)

// TestARunNoProcessRanIsQueued: a run created and left for a worker (no row in its journal) is
// queued, not crashed, and its next action says a worker takes it or a resume runs it; a follow
// of it waits for the process that takes it and ends with the run.
func TestARunNoProcessRanIsQueued(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, id := enginetest.Created(t, `export default async function main() { return "done"; }`)

	st, err := svc.Status(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, store.StateQueued, st.State)
	assert.Equal(t, "no process has run it yet: a worker (crw worker) takes it, or crw flow resume "+id+" runs it here", diagnosis.StateNext(st))

	seen := make(chan store.State, 16)
	followed := make(chan error, 1)
	var end *store.Status
	go func() {
		var err error
		end, err = svc.Follow(ctx, id, func(st *store.Status) {
			select {
			case seen <- st.State:
			default:
			}
		})
		followed <- err
	}()
	require.Equal(t, store.StateQueued, <-seen, "the follow saw the run queued")
	done, err := svc.Execute(ctx, id, engine.ExecOptions{})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, done.Status)
	require.NoError(t, <-followed, "the follow waited for the process and ended with the run")
	assert.Equal(t, store.StateEnded, end.State)
	assert.Equal(t, store.RunCompleted, end.Status)
}
