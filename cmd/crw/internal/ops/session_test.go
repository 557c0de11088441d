package ops

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/engine/backend/session/nextview"
	"github.com/crw-dev/crw/engine/backend/session/wake"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// TestNextReadsAStartingRunAgain: seed 003, a run whose holder has not recorded its start is
// starting, and next reads it again up to 15 seconds whatever --wait says (here shortened)
// before it answers starting; a run whose start ends while next reads it is answered as it is
// then.
func TestNextReadsAStartingRunAgain(t *testing.T) {
	reread := startingReread
	startingReread = 600 * time.Millisecond
	t.Cleanup(func() { startingReread = reread })
	ctx := context.Background()
	st, err := local.New(filepath.Join(t.TempDir(), "state"))
	require.NoError(t, err)
	svc := enginetest.Service(st)
	create := func(id string) store.Lease {
		require.NoError(t, st.Create(ctx, &store.Spec{Schema: store.SpecSchema, Run: id, Input: []byte("null"), Pool: 1,
			Backend: session.Name, BackendOptions: map[string]string{"owner": "019a0000-0000-7000-8000-000000000001"}}))
		lease, err := st.Acquire(ctx, id) // a holder that has not published its start
		require.NoError(t, err)
		return lease
	}

	held := create("20261204-100000-aaaaaa")
	defer held.Release()
	began := time.Now()
	view, err := Next(ctx, svc, st, "20261204-100000-aaaaaa", 0)
	require.NoError(t, err)
	assert.Equal(t, nextview.StateStarting, view.State)
	assert.GreaterOrEqual(t, time.Since(began), startingReread, "answered starting without reading the run again")

	// The holder goes while next reads: next answers what the run is then.
	going := create("20261204-100000-bbbbbb")
	seen := filepath.Join(st.RunDir("20261204-100000-bbbbbb"), wake.SeenFile)
	startingReread = time.Hour
	type answer struct {
		view nextview.NextView
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		v, err := Next(ctx, svc, st, "20261204-100000-bbbbbb", 0)
		done <- answer{v, err}
	}()
	for { // next has read the run once it marks it seen
		if _, err := os.Stat(seen); err == nil {
			break
		}
		select {
		case a := <-done:
			t.Fatalf("next answered %q at once: %v", a.view.State, a.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	going.Release()
	a := <-done
	require.NoError(t, a.err)
	assert.NotEqual(t, nextview.StateStarting, a.view.State)
}
