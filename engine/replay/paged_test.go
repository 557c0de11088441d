package replay_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

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
	paged, err := replay.ReadPagesWithin(source(all), 0)
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
		f, p := full.Call(id), paged.Call(id)
		assert.Equal(t, f.Settled(), p.Settled(), id)
		assert.Equal(t, f.Reopened(), p.Reopened(), id)
		assert.Equal(t, f.Attempt, p.Attempt, id)
		fullRow, err := full.PreparedRow(f)
		require.NoError(t, err)
		pagedRow, err := paged.PreparedRow(p)
		require.NoError(t, err)
		assert.Equal(t, fullRow, pagedRow, "%s: a divergence names the row the journal has", id)
		if f.Terminal != nil {
			assert.True(t, p.Paged(), "%s ended: its rows are read again when it is delivered", id)
			assert.Nil(t, p.Prepared, id)
			assert.Equal(t, []string{f.Terminal.Type, f.Terminal.Reason}, []string{p.EndType, p.EndReason}, id)
		}
	}
	rerun := paged.Call("c4")
	require.EqualValues(t, 2, rerun.Attempt, "a new attempt of a call whose rows were let go is read")
	require.False(t, rerun.Paged())
	assert.Equal(t, "t4", rerun.Turns[0].TurnID)
	open := paged.Call("c5")
	require.False(t, open.Paged(), "an open call keeps its rows: it goes on from its last row")
	assert.Equal(t, "t5", open.Turns[0].TurnID)

	assert.True(t, paged.Call("c1").SameInputs(inputsOf(ask("a", "first"))))
	assert.False(t, paged.Call("c1").SameInputs(inputsOf(ask("a", "First"))), "a paged call compares the prompt")
	assert.False(t, paged.Call("c1").SameInputs(inputsOf(ask("b", "first"))), "and the node")
	other := ask("a", "first")
	other.Handle = "crwh1:20261201-000000-abcdef:c2"
	assert.False(t, paged.Call("c1").SameInputs(inputsOf(other)), "and the handle")

	// Loaded against the journal's order (c1's terminal row is after c2's), then again.
	for _, id := range []string{"c1", "c3", "c2"} {
		got, err := paged.Load(paged.Call(id))
		require.NoError(t, err)
		assert.Equal(t, full.Call(id).Result(full.Run, false), got.Result(paged.Run, false), id)
		assert.Equal(t, full.Call(id).Terminal.At, got.Terminal.At, id)
	}
	_, err = paged.Load(paged.Call("c1"))
	assert.Error(t, err, "a call is loaded once")
	assert.True(t, replay.NoRowsUnwritten(), "no row was written to the rows the calls without rows share")
}

// A journal that cannot be read again fails the load: the run stops rather than give the
// script anything else.
func TestPagedLoadFailsWhenTheJournalCannotBeRead(t *testing.T) {
	t.Parallel()
	all := rows(prepared("c1", 1, "a", "first"), completed("c1"))
	broken := false
	read := source(all)
	h, err := replay.ReadPagesWithin(func(from uint64, limit int, fn func(*journal.Row) error) error {
		if broken {
			return assert.AnError
		}
		return read(from, limit, fn)
	}, 0)
	require.NoError(t, err)
	broken = true
	_, err = h.Load(h.Call("c1"))
	require.ErrorIs(t, err, assert.AnError)
	stand, err := h.PreparedRow(h.Call("c1"))
	require.ErrorIs(t, err, assert.AnError, "what could not be read again is said")
	assert.Equal(t, "c1", stand.Call, "the stand-in still names the call")
	assert.Empty(t, stand.Prompt)
}

// Prefetch loads calls ahead of their deliveries and builds their results: each delivery gets
// what Load alone gives, in order or not, and a replay that stops early stops it.
func TestPrefetchGivesWhatLoadGives(t *testing.T) {
	t.Parallel()
	const n = 2000 // several times the calls Prefetch loads ahead
	all := completedCalls(n)
	full, err := replay.Read(all)
	require.NoError(t, err)

	paged, err := replay.ReadPagesWithin(source(all), 0)
	require.NoError(t, err)
	paged.Prefetch(paged.Order)
	require.Eventually(t, func() bool { return replay.Prefetched(paged) == replay.PrefetchAhead }, time.Minute, time.Millisecond,
		"the prefetch loads as far ahead as it may")
	// The 1,500th first (out of the prefetch's reach), then every call in order.
	late := paged.Order[1499]
	got, err := paged.Load(late)
	require.NoError(t, err)
	assert.Equal(t, full.Call(late.ID).Result(full.Run, false), got.Result(paged.Run, false))
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
		if i%2 == 1 {
			// A shadow's or a resume's delivery: what Prefetch read, without rows made again.
			d, ok := paged.TakeKept(c, true)
			if i < replay.PrefetchAhead {
				require.True(t, ok, "%s: prefetched, it is delivered from what was read", c.ID)
			}
			if !ok {
				// Not read yet: Load reads it (the prefetch is not waited for).
				got, err := paged.Load(c)
				require.NoError(t, err, c.ID)
				require.Equal(t, full.Call(c.ID).Result(full.Run, false), got.Result(paged.Run, false), c.ID)
				continue
			}
			require.Equal(t, full.Call(c.ID).Result(full.Run, true), d.Result, c.ID)
			require.Equal(t, full.Call(c.ID).Terminal.At, d.EndAt, c.ID)
			require.Equal(t, "th-"+c.ID, d.Thread.ID)
			_, err := paged.Load(c)
			require.Error(t, err, "%s: a call is loaded once", c.ID)
			continue
		}
		got, err := paged.Load(c)
		require.NoError(t, err, c.ID)
		require.Equal(t, full.Call(c.ID).Result(full.Run, false), got.Result(paged.Run, false), c.ID)
		require.Equal(t, "th-"+c.ID, got.Thread.ThreadID)
	}
	paged.StopPrefetch()

	// A replay that delivers a few calls and stops: the prefetch stops with it.
	stopped, err := replay.ReadPagesWithin(source(all), 0)
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
	paged, err := replay.ReadPagesWithin(func(from uint64, limit int, fn func(*journal.Row) error) error {
		if from > replay.PageRows && release != nil {
			enteredOnce.Do(func() { close(entered) })
			select {
			case <-release:
			case <-time.After(time.Minute): // a safeguard, not a measure: the test fails
				timedOut = true
			}
		}
		return read(from, limit, fn)
	}, 0)
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

// variedCalls is the journal of n calls of every shape a delivery reads: threads with a model,
// effort, folder and rollout, one a pull backend bound, pairs asked and configured, tokens,
// turns and a repair, answers of growing size, ends other than completed, and a held call
// whose second terminal row is its outcome.
func variedCalls(n int) []journal.Row {
	at := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	var all []journal.Row
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("c%d", i)
		p := prepared(id, i, "n", fmt.Sprintf("prompt %d", i))
		p.At = at.Add(time.Duration(i) * time.Second)
		if i%3 == 0 {
			p.RequestedPair, p.ConfiguredPair = &journal.Pair{Model: "m1", Effort: "low"}, &journal.Pair{Model: "m1", Effort: "low"}
		}
		all = append(all, p)
		if i%5 != 0 {
			th := journal.Row{Type: journal.TypeThreadStarted, Call: id, ThreadID: "th-" + id, Model: "m1", Effort: "high", Cwd: "/w/" + id, RolloutPath: "/r/" + id}
			if i == 7 {
				th.Via, th.Marker, th.Attempt = "owner", "crw:7", 1 // a pull backend's binding
			}
			all = append(all, th, journal.Row{Type: journal.TypeTurnStarted, Call: id, K: 1, TurnID: "t1-" + id})
		}
		end := journal.Row{Call: id, At: p.At.Add(time.Second), Tokens: &journal.Tokens{Input: int64(i), Output: 2, Total: int64(i) + 2}}
		switch {
		case i%19 == 0 || i == 7:
			end.Type, end.Reason = journal.TypeOutcomeUnknown, "dispatch_unknown"
		case i == 23:
			all = append(all, journal.Row{Type: journal.TypeHeld, Call: id, Reason: "engine_paused", At: end.At})
			end.Type, end.Reason = journal.TypeOutcomeUnknown, "dispatch_unknown"
		case i%11 == 0:
			end.Type, end.Reason = journal.TypeNullModel, "schema_invalid_after_repair"
			end.RepairUsed, end.TurnIDs = true, []string{"t1-" + id, "t2-" + id}
		case i%13 == 0:
			end.Type, end.Reason = journal.TypeRefused, "pair_refused"
		case i == 17:
			all = append(all, journal.Row{Type: journal.TypeHeld, Call: id, Reason: "engine_paused", At: end.At})
			end.Type, end.Reason = journal.TypeSuperseded, "superseded_by_resume"
		default:
			end.Type, end.Output, end.TurnIDs = journal.TypeCompleted, []byte(fmt.Sprintf(`{"n":%d,"s":%q}`, i, strings.Repeat("x", i))), []string{"t1-" + id}
		}
		all = append(all, end)
	}
	return rows(all...)
}

// What the first reading keeps of a call's rows gives its delivery what reading them again
// gives: the same CallResult, thread, times and seqs. Within the budget nothing is read
// again; past it, the calls that did not fit are, and a pull backend's thread always is.
func TestKeptRowsGiveWhatReadingAgainGives(t *testing.T) {
	t.Parallel()
	const n = 200
	all := variedCalls(n)
	full, err := replay.Read(all)
	require.NoError(t, err)
	reads := 0
	counted := func(src replay.Source) replay.Source {
		return func(from uint64, limit int, fn func(*journal.Row) error) error {
			reads++
			return src(from, limit, fn)
		}
	}
	for _, c := range []struct {
		name   string
		budget int
		kept   func(i int) bool // whether call i is kept
	}{
		{"none kept", 0, func(int) bool { return false }},
		{"some kept", 10_000, nil},
		{"all kept", 1 << 20, func(i int) bool { return i != 7 }},
	} {
		reads = 0
		paged, err := replay.ReadPagesWithin(counted(source(all)), c.budget)
		require.NoError(t, err, c.name)
		require.Equal(t, 1, reads, c.name)
		assert.Len(t, full.UnknownKeys, 12, "c7, c23 and the 10 multiples of 19")
		assert.Equal(t, full.UnknownKeys, paged.UnknownKeys, "%s: an unknown outcome's effect key is its prepared row's", c.name)
		keptN := 0
		for i := 1; i <= n; i++ {
			call := paged.Call(fmt.Sprintf("c%d", i))
			if replay.Kept(call) {
				keptN++
			}
			if c.kept != nil {
				assert.Equal(t, c.kept(i), replay.Kept(call), "%s: c%d", c.name, i)
			}
		}
		if c.name == "some kept" {
			assert.True(t, keptN > 10 && keptN < n-10, "%s: %d of %d calls kept", c.name, keptN, n)
		}
		for _, rec := range paged.Order {
			want := full.Call(rec.ID)
			got, err := paged.Load(rec)
			require.NoError(t, err, "%s: %s", c.name, rec.ID)
			assert.Equal(t, want.Result(full.Run, false), got.Result(paged.Run, false), "%s: %s", c.name, rec.ID)
			assert.Equal(t, want.Result(full.Run, true), got.Result(paged.Run, true), "%s: %s", c.name, rec.ID)
			assert.Equal(t, []any{want.Prepared.Seq, want.Prepared.At, want.Terminal.Seq, want.Terminal.At, want.Terminal.Type},
				[]any{got.Prepared.Seq, got.Prepared.At, got.Terminal.Seq, got.Terminal.At, got.Terminal.Type}, "%s: %s", c.name, rec.ID)
			if want.Thread == nil {
				assert.Nil(t, got.Thread, "%s: %s", c.name, rec.ID)
				continue
			}
			w, g := want.Thread, got.Thread
			assert.Equal(t, []string{w.ThreadID, w.Model, w.Effort, w.Cwd, w.RolloutPath, w.Via, w.Marker},
				[]string{g.ThreadID, g.Model, g.Effort, g.Cwd, g.RolloutPath, g.Via, g.Marker}, "%s: %s", c.name, rec.ID)
			assert.Equal(t, w.Attempt, g.Attempt, "%s: %s", c.name, rec.ID)
		}
		assert.LessOrEqual(t, replay.KeptWeight(paged), c.budget, c.name)
		for _, rec := range paged.Order {
			_, err := paged.Load(rec)
			assert.Error(t, err, "%s: %s: a call is loaded once", c.name, rec.ID)
		}
		if c.name == "all kept" {
			assert.Equal(t, 2, reads, "only the call a pull backend's thread names is read again")
		}

		// A shadow takes each call's CallResult and end time alone: the same, kept or read again.
		paged, err = replay.ReadPagesWithin(source(all), c.budget)
		require.NoError(t, err, c.name)
		for i, rec := range paged.Order {
			want := full.Call(rec.ID)
			omit := i%2 == 0
			got, at, err := paged.LoadResult(rec, omit)
			require.NoError(t, err, "%s: %s", c.name, rec.ID)
			assert.Equal(t, want.Result(full.Run, omit), got, "%s: %s", c.name, rec.ID)
			assert.Equal(t, want.Terminal.At, at, "%s: %s", c.name, rec.ID)
		}
		for _, rec := range paged.Order {
			_, _, err := paged.LoadResult(rec, false)
			assert.Error(t, err, "%s: %s: a call is loaded once", c.name, rec.ID)
		}
	}
}

// A paged History keeps a Call for every call of its run, the whole of its memory at 100,000
// calls: a field added to Call that moves it past the allocator's 144-byte class costs 1.6 MB
// there, and is a choice to make knowingly.
func TestACallFitsTheAllocatorsClass(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(replay.Call{}), uintptr(144))
}

// TestACallAPauseInterruptedRunsAgain: a call whose interrupt was asked by a pause and whose
// process died before its held row is reopened (a resume runs it again), read whole or a page
// at a time; one a cancel interrupted, or one never interrupted, is not.
func TestACallAPauseInterruptedRunsAgain(t *testing.T) {
	t.Parallel()
	all := rows(prepared("c1", 1, "a", "first"), prepared("c2", 2, "b", "second"), prepared("c3", 3, "c", "third"),
		journal.Row{Type: journal.TypeInterruptRequested, Call: "c1", Reason: "cancelled"},
		journal.Row{Type: journal.TypeInterruptRequested, Call: "c1", Reason: "engine_paused"},
		journal.Row{Type: journal.TypeInterruptRequested, Call: "c2", Reason: "cancelled"})
	full, err := replay.Read(all)
	require.NoError(t, err)
	paged, err := replay.ReadPagesWithin(source(all), 0)
	require.NoError(t, err)
	for _, h := range []*replay.History{full, paged} {
		assert.True(t, h.Call("c1").Reopened(), "the pause's interrupt, the newest")
		assert.False(t, h.Call("c2").Reopened(), "a cancel's interrupt")
		assert.False(t, h.Call("c3").Reopened(), "no interrupt")
	}
}
