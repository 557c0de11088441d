package mem_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
	"github.com/crw-dev/crw/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) (store.Store, store.Store) {
			s := mem.New()
			return s, s
		},
		Revoke: func(t *testing.T, s store.Store, run string) { s.(*mem.Store).Revoke(run) },
	})
}

// TestCrashAfterRow: the holder loses its lease right after the commit that stores the row,
// which is durable; what it appends after is not, and the next holder writes on.
func TestCrashAfterRow(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	const id = "20261205-061500-a1b2c3"
	require.NoError(t, s.Create(ctx, storetest.Spec(id)))
	s.CrashAfterRow(id, func(r *journal.Row) bool { return r.Type == journal.TypeHeld && r.Call == "c2" })
	l, err := s.Acquire(ctx, id)
	require.NoError(t, err)
	j := l.Journal()
	_, err = j.Write(&journal.Row{Type: journal.TypeHeld, Call: "c1"})
	require.NoError(t, err)
	_, err = j.Write(&journal.Row{Type: journal.TypeHeld, Call: "c2"}, &journal.Row{Type: journal.TypeHeld, Call: "c3"})
	require.NoError(t, err, "the commit that stores the row is durable")
	_, err = j.Write(&journal.Row{Type: journal.TypeHeld, Call: "c4"})
	require.ErrorIs(t, err, store.ErrLeaseLost)
	var calls []string
	require.NoError(t, s.Rows(ctx, id, 1, func(r *journal.Row) error { calls = append(calls, r.Call); return nil }))
	assert.Equal(t, []string{"c1", "c2", "c3"}, calls)
	l.Release()
	next, err := s.Acquire(ctx, id)
	require.NoError(t, err)
	_, err = next.Journal().Write(&journal.Row{Type: journal.TypeHeld, Call: "c4"})
	require.NoError(t, err, "the next holder does not crash")
}
