package replay_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/journal"
)

// source serves a journal's rows as store.Journal.Each does: each in the same Row, which is
// scribbled over once fn returns, so a row the History kept without copying it reads wrong.
func source(all []journal.Row) replay.Source {
	var row journal.Row
	return func(from uint64, limit int, fn func(*journal.Row) error) error {
		for seq := from; seq <= uint64(len(all)) && (limit <= 0 || seq < from+uint64(limit)); seq++ {
			row = all[seq-1]
			err := fn(&row)
			row = journal.Row{Seq: 999, Type: journal.TypeWarning, Call: "scribbled", Prompt: "scribbled", Output: []byte(`"scribbled"`)}
			if err != nil {
				return err
			}
		}
		return nil
	}
}

func ids(calls []*replay.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.ID)
	}
	return out
}

// A paged History says what Read's says, keeps no rows of a call that ended, and gives every
// settled call's CallResult byte for byte, in whatever order its calls are loaded.
func TestPagedHistoryReadsWhatReadKeeps(t *testing.T) {
	t.Parallel()
	thread := journal.Row{Type: journal.TypeThreadStarted, Call: "c1", ThreadID: "th1", Model: "m"}
	tokens := completed("c2")
	tokens.Tokens = &journal.Tokens{Input: 7, Output: 3, Total: 10}
	all := rows(
		prepared("c1", 1, "a", "first"), prepared("c2", 2, "b", "second"), thread,
		prepared("c3", 3, "c", "third"), tokens, completed("c3"),
	)
	all = append(all,
		completed("c1"),
		journal.Row{Type: journal.TypePrepared, Call: "c4", Index: 4, Role: "explorer", Node: "d", Prompt: "fourth"},
		held("c4", "host_infra_quota"),
		journal.Row{Type: journal.TypePrepared, Call: "c5", Index: 5, Role: "explorer", Node: "e", Prompt: "fifth"},
		journal.Row{Type: journal.TypeTurnStarted, Call: "c5", K: 1, TurnID: "t5"},
		journal.Row{Type: journal.TypeOutcomeUnknown, Call: "c3", Reason: "dispatch_unknown"}, // a second terminal row
		journal.Row{Type: journal.TypeStarted, Run: "20261201-000000-abcdef"},                 // a resume runs c4 again
		journal.Row{Type: journal.TypePrepared, Call: "c4", Index: 4, Role: "explorer", Node: "d", Prompt: "fourth"},
		journal.Row{Type: journal.TypeTurnStarted, Call: "c4", K: 1, TurnID: "t4"},
	)
	for i := range all {
		all[i].Seq = uint64(i + 1)
	}
	full, err := replay.Read(all)
	require.NoError(t, err)
	paged, err := replay.ReadPages(source(all))
	require.NoError(t, err)

	assert.Equal(t, ids(full.Order), ids(paged.Order))
	assert.Equal(t, []string{"c2", "c1", "c3"}, ids(paged.Order), "c3's second terminal row is its outcome")
	assert.Equal(t, ids(full.Finished), ids(paged.Finished))
	assert.Equal(t, full.IDs, paged.IDs)
	assert.Equal(t, full.Holds, paged.Holds)
	assert.Equal(t, full.Spent, paged.Spent)
	assert.Equal(t, []int{full.MaxCall, full.MaxIndex}, []int{paged.MaxCall, paged.MaxIndex})
	assert.Equal(t, full.LastSeq, paged.LastSeq)
	for _, id := range full.IDs {
		f, p := full.ByID[id], paged.ByID[id]
		assert.Equal(t, f.Settled(), p.Settled(), id)
		assert.Equal(t, f.Reopened(), p.Reopened(), id)
		assert.Equal(t, f.Attempt, p.Attempt, id)
		assert.Equal(t, full.PreparedRow(f), paged.PreparedRow(p), "%s: a divergence names the row the journal has", id)
		if f.Terminal != nil {
			assert.True(t, p.Paged(), "%s ended: its rows are read again when it is delivered", id)
			assert.Nil(t, p.Prepared, id)
			assert.Equal(t, []string{f.Terminal.Type, f.Terminal.Reason}, []string{p.EndType, p.EndReason}, id)
		}
	}
	rerun := paged.ByID["c4"]
	require.Equal(t, 2, rerun.Attempt, "a new attempt of a call whose rows were let go is read")
	require.False(t, rerun.Paged())
	assert.Equal(t, "t4", rerun.Turns[0].TurnID)
	open := paged.ByID["c5"]
	require.False(t, open.Paged(), "an open call keeps its rows: it goes on from its last row")
	assert.Equal(t, "t5", open.Turns[0].TurnID)

	assert.True(t, paged.ByID["c1"].SameInputs(inputsOf(ask("a", "first"))))
	assert.False(t, paged.ByID["c1"].SameInputs(inputsOf(ask("a", "First"))), "a paged call compares the prompt")
	assert.False(t, paged.ByID["c1"].SameInputs(inputsOf(ask("b", "first"))), "and the node")
	other := ask("a", "first")
	other.Handle = "crwh1:20261201-000000-abcdef:c2"
	assert.False(t, paged.ByID["c1"].SameInputs(inputsOf(other)), "and the handle")

	// Loaded against the journal's order (c1's terminal row is after c2's), then again.
	for _, id := range []string{"c1", "c3", "c2"} {
		got, err := paged.Load(paged.ByID[id])
		require.NoError(t, err)
		assert.Equal(t, full.ByID[id].Result(full.Run, false), got.Result(paged.Run, false), id)
		assert.Equal(t, full.ByID[id].Terminal.At, got.Terminal.At, id)
	}
	_, err = paged.Load(paged.ByID["c1"])
	assert.Error(t, err, "a call is loaded once")
}

// A journal that cannot be read again fails the load: the run stops rather than give the
// script anything else.
func TestPagedLoadFailsWhenTheJournalCannotBeRead(t *testing.T) {
	t.Parallel()
	all := rows(prepared("c1", 1, "a", "first"), completed("c1"))
	broken := false
	read := source(all)
	h, err := replay.ReadPages(func(from uint64, limit int, fn func(*journal.Row) error) error {
		if broken {
			return assert.AnError
		}
		return read(from, limit, fn)
	})
	require.NoError(t, err)
	broken = true
	_, err = h.Load(h.ByID["c1"])
	require.ErrorIs(t, err, assert.AnError)
	assert.Equal(t, "c1", h.PreparedRow(h.ByID["c1"]).Call, "a divergence still names the call")
}

// Prefetch loads calls ahead of their deliveries and builds their results: each delivery gets
// what Load alone gives, in order or not, and a replay that stops early stops it.
func TestPrefetchGivesWhatLoadGives(t *testing.T) {
	t.Parallel()
	const n = 2000 // several times the calls Prefetch loads ahead
	all := completedCalls(n)
	full, err := replay.Read(all)
	require.NoError(t, err)

	paged, err := replay.ReadPages(source(all))
	require.NoError(t, err)
	paged.Prefetch(paged.Order)
	require.Eventually(t, func() bool { return replay.Prefetched(paged) == replay.PrefetchAhead }, time.Minute, time.Millisecond,
		"the prefetch loads as far ahead as it may")
	// The 1,500th first (out of the prefetch's reach), then every call in order.
	late := paged.Order[1499]
	got, err := paged.Load(late)
	require.NoError(t, err)
	assert.Equal(t, full.ByID[late.ID].Result(full.Run, false), got.Result(paged.Run, false))
	for i, c := range paged.Order {
		if i == 1600 {
			require.Eventually(t, func() bool { return replay.Prefetched(paged) == min(replay.PrefetchAhead, n-1600) }, time.Minute, time.Millisecond,
				"the prefetch went on past the call delivered out of turn")
		}
		if c == late {
			_, err := paged.Load(c)
			assert.Error(t, err, "a call is loaded once")
			continue
		}
		got, err := paged.Load(c)
		require.NoError(t, err, c.ID)
		require.Equal(t, full.ByID[c.ID].Result(full.Run, false), got.Result(paged.Run, false), c.ID)
		require.Equal(t, "th-"+c.ID, got.Thread.ThreadID)
	}
	paged.StopPrefetch()

	// A replay that delivers a few calls and stops: the prefetch stops with it.
	stopped, err := replay.ReadPages(source(all))
	require.NoError(t, err)
	stopped.Prefetch(stopped.Order)
	for _, c := range stopped.Order[:3] {
		_, err := stopped.Load(c)
		require.NoError(t, err)
	}
	stopped.StopPrefetch()
	stopped.StopPrefetch() // twice is once
}

// A delivery takes what Prefetch loaded without waiting for the page Prefetch is reading
// meanwhile: a replay's script does not stall on the journal's second reading.
func TestADeliveryDoesNotWaitForThePagePrefetchReads(t *testing.T) {
	t.Parallel()
	const n = 1000
	all := completedCalls(n)
	// The first page holds the rows of the calls up to lastOnPage; the next one's are read
	// only once the test lets the source go on.
	lastOnPage := replay.PageRows / 3
	read := source(all)
	entered, release := make(chan struct{}), make(chan struct{})
	var enteredOnce sync.Once
	timedOut := false
	paged, err := replay.ReadPages(func(from uint64, limit int, fn func(*journal.Row) error) error {
		if from > replay.PageRows && release != nil {
			enteredOnce.Do(func() { close(entered) })
			select {
			case <-release:
			case <-time.After(time.Minute): // a safeguard, not a measure: the test fails
				timedOut = true
			}
		}
		return read(from, limit, fn)
	})
	require.NoError(t, err)
	paged.Prefetch(paged.Order)
	defer paged.StopPrefetch()
	// Delivered until Prefetch, PrefetchAhead calls ahead, needs the second page.
	next := 0
	for ; next < lastOnPage-replay.PrefetchAhead+1; next++ {
		_, err := paged.Load(paged.Order[next])
		require.NoError(t, err)
	}
	<-entered
	for ; next < lastOnPage; next++ {
		got, err := paged.Load(paged.Order[next])
		require.NoError(t, err)
		require.Equal(t, "th-"+paged.Order[next].ID, got.Thread.ThreadID)
	}
	close(release)
	for ; next < n; next++ {
		_, err := paged.Load(paged.Order[next])
		require.NoError(t, err)
	}
	assert.False(t, timedOut, "the deliveries of prefetched calls waited for the page being read")
}

// completedCalls is the journal of n calls that completed one after the other, each with a
// thread: three rows a call.
func completedCalls(n int) []journal.Row {
	var all []journal.Row
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("c%d", i)
		all = append(all, prepared(id, i, "n", fmt.Sprintf("prompt %d", i)),
			journal.Row{Type: journal.TypeThreadStarted, Call: id, ThreadID: "th-" + id}, completed(id))
	}
	return rows(all...)
}

// The highest call number a journal names is read from ids as crw writes them, and as far as
// an id of another shape allows.
func TestCallNumber(t *testing.T) {
	for id, want := range map[string]int{"c1": 1, "c10000": 10000, "c+7": 7, "c12x": 12, "c007": 7, "c-5": -1, "c": -1, "x5": -1, "": -1, "C5": -1, "c99999999999999999999": -1} {
		n, ok := replay.CallNumber(id)
		if !ok {
			n = -1
		}
		assert.Equal(t, want, n, id)
	}
}
