package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/timeline"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
	"github.com/crw-dev/crw/store/storetest"
)

// rowless is a store whose journals cannot be read row by row: what answers through it reads
// no row.
type rowless struct {
	store.Store
	t *testing.T
}

func (s rowless) Rows(ctx context.Context, run string, from uint64, fn func(*journal.Row) error) error {
	s.t.Error("the rows were read")
	return s.Store.Rows(ctx, run, from, fn)
}

// TestStatusAndListReadNoRow: status and list of a run no process holds answer from the
// summary its journal keeps, not from its rows, and say what the rows say.
func TestStatusAndListReadNoRow(t *testing.T) {
	t.Parallel()
	script := `
import { agent } from "crw:agent";
export default async function main() {
  for (let i = 0; i < 3; i++) await agent.call({ role: "critic", node: "n", prompt: "p" + i });
  throw new Error("after three calls");
}`
	answers := `{"answers": [{"match": {}, "turns": [{"text": "ok", "tokens": {"input": 10, "output": 2}}]}]}`
	for name, opts := range map[string][]enginetest.Option{"local": nil, "mem": {enginetest.Memory()}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := enginetest.Start(t, script, answers, opts...)
			require.NoError(t, o.Err)
			svc := *o.Service
			svc.Store = rowless{Store: o.Service.Store, t: t}
			st, err := svc.Status(context.Background(), o.Status.Run)
			require.NoError(t, err)
			assert.Equal(t, store.StateEnded, st.State)
			assert.Equal(t, store.RunFailed, st.Status)
			assert.Equal(t, "after three calls", st.Error.Detail)
			assert.Equal(t, store.Counts{journal.StatusCompleted: 3}, st.Calls)
			assert.Equal(t, journal.Tokens{Input: 30, Output: 6, Total: 36}, st.Tokens)
			assert.Equal(t, json.RawMessage("null"), st.Result)

			list, err := svc.List(context.Background())
			require.NoError(t, err)
			require.Len(t, list, 1)
			assert.Equal(t, *st, list[0])

			tl, err := o.Service.Timeline(context.Background(), o.Status.Run, timeline.Options{})
			require.NoError(t, err)
			assert.Equal(t, tl.Counts, st.Calls, "as the timeline counts")
			assert.Equal(t, tl.Tokens, st.Tokens)
		})
	}
}

// BenchmarkStatusOfLargeRun is Status and List of an ended run of 100,000 calls no process
// holds, on the on-disk store: they read the journal's summary, so they cost what a run of ten
// calls costs (the target: under 20 ms).
func BenchmarkStatusOfLargeRun(b *testing.B) {
	const calls = 100000
	st, err := local.New(filepath.Join(b.TempDir(), "state"))
	require.NoError(b, err)
	run := "20261201-000000-abc123"
	spec := storetest.Spec(run)
	require.NoError(b, st.Create(context.Background(), spec))
	lease, err := st.Acquire(context.Background(), run)
	require.NoError(b, err)
	rows := []*journal.Row{{Type: journal.TypeStarted, Run: run}}
	for i := 1; i <= calls; i++ {
		id := fmt.Sprintf("c%d", i)
		rows = append(rows,
			&journal.Row{Type: journal.TypePrepared, Call: id, Index: i, Role: "executor", Node: "step", Prompt: "Carry out step " + id},
			&journal.Row{Type: journal.TypeCompleted, Call: id, Output: json.RawMessage(`"done"`), Tokens: &journal.Tokens{Input: 5, Total: 5}})
	}
	rows = append(rows, &journal.Row{Type: journal.TypeEnded, Status: "completed", Result: json.RawMessage(`100000`)})
	_, err = lease.Journal().Write(rows...)
	require.NoError(b, err)
	require.NoError(b, lease.Release())
	svc := enginetest.Service(st)
	b.Run("status", func(b *testing.B) {
		for b.Loop() {
			s, err := svc.Status(context.Background(), run)
			if err != nil || s.Calls[journal.StatusCompleted] != calls {
				b.Fatalf("%v %+v", err, s)
			}
		}
	})
	b.Run("list", func(b *testing.B) {
		for b.Loop() {
			l, err := svc.List(context.Background())
			if err != nil || len(l) != 1 || l[0].Calls[journal.StatusCompleted] != calls {
				b.Fatalf("%v %+v", err, l)
			}
		}
	})
}
