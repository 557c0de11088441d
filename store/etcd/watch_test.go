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

	// told waits for the change one act makes, seen by a watch made before it.
	told := func(what string, act func()) {
		t.Helper()
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ch, err := other.Changes(wctx, id)
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
	var lease store.Lease
	told("a holder takes the run", func() {
		var err error
		lease, err = s.Acquire(ctx, id)
		require.NoError(t, err)
	})
	told("a status is published", func() { lease.Publish(&store.Status{Run: id, State: store.StateRunning}) })
	told("a commit", func() {
		_, err := lease.Journal().Write(&journal.Row{Type: journal.TypeStarted, Run: id})
		require.NoError(t, err)
	})
	told("the holder lets the run go", func() { require.NoError(t, lease.Release()) })
}

// TestRunsChangedTellsOfARunBecomingFree: a watch of the runs, in place when RunsChanged
// returns, tells of a run created and of a holder letting a run go, each seen from another
// client; it is closed when its context ends.
func TestRunsChangedTellsOfARunBecomingFree(t *testing.T) {
	s, other, _ := stores(t)
	ctx := context.Background()
	told := func(what string, act func()) {
		t.Helper()
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ch, err := other.RunsChanged(wctx)
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
	id := storetest.ID(1)
	told("a run is created", func() { require.NoError(t, s.Create(ctx, storetest.Spec(id))) })
	lease, err := s.Acquire(ctx, id)
	require.NoError(t, err)
	_, err = lease.Journal().Write(&journal.Row{Type: journal.TypeStarted, Run: id})
	require.NoError(t, err)
	told("its holder lets it go", func() { require.NoError(t, lease.Release()) })
}
