package runner

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
	gate := stopGate{Journal: lease.Journal(), stopped: func() error { return stop }}
	w := &Warnings{}
	for i := 0; i < maxEarlyWarnings+10; i++ {
		w.Warn("early", fmt.Sprint(i))
	}
	_, err = gate.Write(&journal.Row{Type: journal.TypeStarted, Run: run})
	require.NoError(t, err)
	w.bind(gate)
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
