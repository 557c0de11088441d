package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/storetest"
)

// TestChangesTellOfWhatAStatusIsReadFrom: a watch of a run's changes, in place when Changes
// returns, tells of a holder taking the run, of a published status, of a commit and of the
// holder letting the run go, each seen from another client of the cluster; it is closed when
// its context ends.
func TestChangesTellOfWhatAStatusIsReadFrom(t *testing.T) {
	s, other, _ := stores(t)
	ctx := context.Background()
	id := storetest.ID(1)
	require.NoError(t, s.Create(ctx, storetest.Spec(id)))

	changes := func(ctx context.Context) (<-chan struct{}, error) { return other.Changes(ctx, id) }
	var lease store.Lease
	told(t, "a holder takes the run", changes, func() {
		var err error
		lease, err = s.Acquire(ctx, id)
		require.NoError(t, err)
	})
	told(t, "a status is published", changes, func() { lease.Publish(&store.Status{Run: id, State: store.StateRunning}) })
	told(t, "a commit", changes, func() {
		_, err := lease.Journal().Write(&journal.Row{Type: journal.TypeStarted, Run: id})
		require.NoError(t, err)
	})
	told(t, "the holder lets the run go", changes, func() { require.NoError(t, lease.Release()) })
}

// TestRunsChangedTellsOfARunBecomingFree: a watch of the runs, in place when RunsChanged
// returns, tells of a run created and of a holder letting a run go, each seen from another
// client; it is closed when its context ends.
func TestRunsChangedTellsOfARunBecomingFree(t *testing.T) {
	s, other, _ := stores(t)
	ctx := context.Background()
	id := storetest.ID(1)
	told(t, "a run is created", other.RunsChanged, func() { require.NoError(t, s.Create(ctx, storetest.Spec(id))) })
	lease, err := s.Acquire(ctx, id)
	require.NoError(t, err)
	_, err = lease.Journal().Write(&journal.Row{Type: journal.TypeStarted, Run: id})
	require.NoError(t, err)
	told(t, "its holder lets it go", other.RunsChanged, func() { require.NoError(t, lease.Release()) })
}

// told waits for the change act makes, seen by a watch watch makes before it; the watch is
// closed once its context ends.
func told(t *testing.T, what string, watch func(ctx context.Context) (<-chan struct{}, error), act func()) {
	t.Helper()
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := watch(wctx)
	require.NoError(t, err)
	act()
	select {
	case _, ok := <-ch:
		require.True(t, ok, "%s: the watch ended instead", what)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no change told", what)
	}
	cancel()
	for range ch { // closed once its context ends
	}
}
