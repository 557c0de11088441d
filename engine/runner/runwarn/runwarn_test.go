package runwarn

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

// TestWarningsFollowTheRunsJournal: a backend's warnings wait for the started row, at most
// maxEarlyWarnings of them, and none is written once the run has stopped.
func TestWarningsFollowTheRunsJournal(t *testing.T) {
	ctx := context.Background()
	st := mem.New()
	run := "20261201-000000-abc123"
	require.NoError(t, st.Create(ctx, &store.Spec{Schema: store.SpecSchema, Run: run, CreatedAt: time.Now()}))
	lease, err := st.Acquire(ctx, run)
	require.NoError(t, err)
	defer lease.Release()

	var stop error
	gate := stopping{Journal: lease.Journal(), stopped: func() error { return stop }}
	w := &Sink{}
	for i := 0; i < maxEarlyWarnings+10; i++ {
		w.Warn("early", fmt.Sprint(i))
	}
	_, err = gate.Write(&journal.Row{Type: journal.TypeStarted, Run: run})
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
