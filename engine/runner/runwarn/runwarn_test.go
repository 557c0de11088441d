package runwarn

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend/pull"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

// TestWarningsFollowTheRunsJournal: a backend's warnings wait for the started row, at most
// maxEarlyWarnings of them, and none is written once the run has stopped.
func TestWarningsFollowTheRunsJournal(t *testing.T) {
	_, run, lease := leased(t)

	var stop error
	gate := stopping{Journal: lease.Journal(), stopped: func() error { return stop }}
	w := &Sink{}
	for i := 0; i < maxEarlyWarnings+10; i++ {
		w.Warn("early", fmt.Sprint(i))
	}
	_, err := gate.Write(&journal.Row{Type: journal.TypeStarted, Run: run})
	require.NoError(t, err)
	w.Bind(gate)
	w.Warn("late", "")
	stop = errors.New("stopped")
	w.Warn("after the stop", "")
	require.Error(t, gate.Sync(gate.LastSeq()), "a stopped run syncs nothing")

	require.NoError(t, lease.Journal().Sync(lease.Journal().LastSeq()))
	rows, err := lease.Journal().Rows()
	require.NoError(t, err)
	require.Len(t, rows, 1+maxEarlyWarnings+1)
	assert.Equal(t, journal.TypeStarted, rows[0].Type)
	assert.Equal(t, "0", rows[1].Detail)
	assert.Equal(t, fmt.Sprint(maxEarlyWarnings-1), rows[maxEarlyWarnings].Detail)
	assert.Equal(t, "late", rows[len(rows)-1].Reason)
}

// stopping is a journal that writes nothing once stopped says so, as the runner's does.
type stopping struct {
	store.Journal
	stopped func() error
}

func (g stopping) Append(rows ...*journal.Row) uint64 {
	if g.stopped() != nil {
		return 0
	}
	return g.Journal.Append(rows...)
}

func (g stopping) Sync(seq uint64) error {
	if err := g.stopped(); err != nil {
		return err
	}
	return g.Journal.Sync(seq)
}

func (g stopping) Write(rows ...*journal.Row) (uint64, error) {
	if err := g.stopped(); err != nil {
		return 0, err
	}
	return g.Journal.Write(rows...)
}

// leased is a new run of a store of its own, and its lease.
func leased(t *testing.T) (*mem.Store, string, store.Lease) {
	ctx := context.Background()
	st := mem.New()
	run := "20261201-000000-abc123"
	require.NoError(t, st.Create(ctx, &store.Spec{Schema: store.SpecSchema, Run: run, CreatedAt: time.Now()}))
	lease, err := st.Acquire(ctx, run)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lease.Release() })
	return st, run, lease
}

// rawEvent is an event a backend made up: a row of another type, or none.
type rawEvent struct{ row *journal.Row }

func (e rawEvent) Row() *journal.Row { return e.row }

// TestAnEventOfAnotherRowTypeIsRefused: the events of the pull contract are journaled as
// their rows; a row of any other type a backend reports as an event (a completed row, a
// started row, none) is not, and a warning says so.
func TestAnEventOfAnotherRowTypeIsRefused(t *testing.T) {
	ctx := context.Background()
	st, run, lease := leased(t)
	w := &Sink{}
	w.Bind(lease.Journal())
	w.Report(pull.WakeEnded{WakeID: "b1", TurnID: "t1", TurnStatus: "completed", Owner: "th"})
	w.Report(rawEvent{&journal.Row{Type: journal.TypeCompleted, Call: "c1", Output: []byte(`{"forged":true}`)}})
	w.Report(rawEvent{&journal.Row{Type: journal.TypeStarted, Run: run}})
	w.Report(rawEvent{nil})
	var rows []journal.Row
	require.NoError(t, st.Rows(ctx, run, 1, func(r *journal.Row) error { rows = append(rows, *r); return nil }))
	require.Len(t, rows, 4)
	assert.Equal(t, journal.TypeSessionWakeEnded, rows[0].Type)
	for i, what := range []string{`a row of type "completed"`, `a row of type "started"`, "no row"} {
		r := rows[i+1]
		assert.Equal(t, journal.TypeWarning, r.Type)
		assert.Equal(t, ReasonEventRefused, r.Reason)
		assert.Empty(t, r.Call, "the forged row's call is not the warning's")
		assert.Contains(t, r.Detail, "the backend reported "+what+" as an event of the run")
	}
}
