package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

// watched is a store that tells a follower of changes when the test says.
type watched struct {
	*mem.Store
	changes chan struct{}
}

func (w *watched) Changes(ctx context.Context, run string) (<-chan struct{}, error) {
	return w.changes, nil
}

// TestFollowLooksWhenTheStoreTellsOfAChange: on a store.Watcher, Follow looks at the run when
// the store tells of a change, not on a timer (both of its intervals are an hour here): the
// run ends while it waits, and it sees the end at the change the store tells, and not before.
func TestFollowLooksWhenTheStoreTellsOfAChange(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := &watched{Store: mem.New(), changes: make(chan struct{}, 1)}
	svc := enginetest.Service(st)
	svc.FollowEvery, svc.FollowWatched = time.Hour, time.Hour
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() { return (await agent.call({ role: "explorer", prompt: "look" })).status; }
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	gate := enginetest.GateAnswers(fake.New(nil, nil), func(backend.Call) bool { return true })
	ended := make(chan *store.Status, 1)
	go func() {
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: gate})
		assert.NoError(t, err)
		ended <- end
	}()
	<-gate.FirstSent() // the call is in flight: the run is running

	looks := make(chan store.State, 8)
	followed := make(chan *store.Status, 1)
	go func() {
		end, err := svc.Follow(ctx, id, func(s *store.Status) { looks <- s.State })
		assert.NoError(t, err)
		followed <- end
	}()
	assert.Equal(t, store.StateRunning, <-looks)
	gate.Open()
	require.Equal(t, store.RunCompleted, (<-ended).Status)
	select {
	case s := <-looks:
		t.Fatalf("Follow looked again (%s) with no change told", s)
	default:
	}
	st.changes <- struct{}{}
	end := <-followed
	require.NotNil(t, end)
	assert.Equal(t, store.StateEnded, end.State)
	assert.Equal(t, store.RunCompleted, end.Status)
	assert.Equal(t, store.StateEnded, <-looks)
}

// countingStore counts the runs whose published status was read.
type countingStore struct {
	*mem.Store
	published atomic.Int64
}

func (c *countingStore) Published(ctx context.Context, run string) (*store.Status, bool, error) {
	c.published.Add(1)
	return c.Store.Published(ctx, run)
}

// TestAListPageReadsItsOwnRuns: a page of the newest runs reads the status of its own runs, not
// of every run the store has (that older ones are left is known from their ids).
func TestAListPageReadsItsOwnRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &countingStore{Store: mem.New()}
	svc := enginetest.Service(st)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`export default async function main() { return 1; }`), 0o644))
	var ids []string
	for range 40 {
		id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
		require.NoError(t, err)
		ids = append(ids, id)
	}
	slices.Sort(ids)
	st.published.Store(0)
	page, err := svc.ListPage(ctx, engine.ListQuery{Limit: 5})
	require.NoError(t, err)
	require.Len(t, page.Runs, 5)
	assert.Equal(t, ids[35], page.Runs[0].Run, "the newest five, oldest first")
	assert.Equal(t, ids[39], page.Runs[4].Run)
	assert.Equal(t, ids[35], page.Next)
	assert.Equal(t, int64(5), st.published.Load(), "status reads for a page of 5 of 40 runs")

	page, err = svc.ListPage(ctx, engine.ListQuery{Limit: 5, Before: ids[2]})
	require.NoError(t, err)
	require.Len(t, page.Runs, 2)
	assert.Equal(t, []string{ids[0], ids[1]}, []string{page.Runs[0].Run, page.Runs[1].Run})
	assert.Empty(t, page.Next, "no run is older")
}
