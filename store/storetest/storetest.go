// Package storetest holds the tests every store must pass: the Store contract, run against an
// implementation by its own test.
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Harness is what a store's test gives the suite.
type Harness struct {
	// New returns a new, empty store and a second view of the same store, as another process
	// has it (the same value where processes cannot differ).
	New func(t *testing.T) (s, other store.Store)
	// Revoke makes a run's lease lost the way the store can lose one.
	Revoke func(t *testing.T, s store.Store, run string)
}

// Run runs the contract's tests.
func Run(t *testing.T, h Harness) {
	tests := map[string]func(*testing.T, Harness){
		"CreateSpecList":      testCreateSpecList,
		"LeaseIsExclusive":    testLeaseIsExclusive,
		"RowsWhileHeld":       testRowsWhileHeld,
		"Summary":             testSummary,
		"ResultAsWritten":     testResultAsWritten,
		"SummaryWhenFenced":   testSummaryWhenFenced,
		"Outstanding":         testOutstanding,
		"Published":           testPublished,
		"CancelIsStored":      testCancelIsStored,
		"LostLeaseIsFenced":   testLostLeaseIsFenced,
		"Delete":              testDelete,
		"FilesByDigest":       testFilesByDigest,
		"Records":             testRecords,
		"Log":                 testLog,
		"ConcurrentAppenders": testConcurrentAppenders,
	}
	for name, fn := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, h)
		})
	}
}

var ctx = context.Background()

// Spec is a spec for a test run.
func Spec(id string) *store.Spec {
	return &store.Spec{
		Schema: store.SpecSchema, Run: id, Workflow: "/w/wf.js", ScriptDigest: "sha256:00", Backend: "fake",
		BackendOptions: map[string]string{"answers": "/w/answers.json"}, Cwd: "/w", Input: json.RawMessage(`{"task":"x"}`),
		Pool: 4, Roles: map[string]journal.Pair{"architect": {Model: "m"}}, Env: map[string]string{"TMPDIR": "/tmp"},
		CreatedAt: time.Date(2026, 12, 1, 1, 2, 3, 0, time.UTC),
	}
}

// ID is the id of the nth test run.
func ID(n int) string { return fmt.Sprintf("20261201-0000%02d-abc%03d", n%100, n%1000) }

func create(t *testing.T, s store.Store, n int) string {
	t.Helper()
	id := ID(n)
	require.NoError(t, s.Create(ctx, Spec(id)))
	return id
}

func acquire(t *testing.T, s store.Store, id string) store.Lease {
	t.Helper()
	l, err := s.Acquire(ctx, id)
	require.NoError(t, err)
	t.Cleanup(func() { l.Release() })
	return l
}

func rows(t *testing.T, s store.Store, id string, from uint64) []journal.Row {
	t.Helper()
	var out []journal.Row
	require.NoError(t, s.Rows(ctx, id, from, func(r *journal.Row) error {
		out = append(out, *r)
		return nil
	}))
	return out
}

func seqs(rs []journal.Row) []uint64 {
	out := make([]uint64, len(rs))
	for i, r := range rs {
		out[i] = r.Seq
	}
	return out
}

func warning(detail string) *journal.Row {
	return &journal.Row{Type: journal.TypeWarning, Reason: "test", Detail: detail}
}

// code asserts err is an errs.Error of code wrapping target (when not nil).
func code(t *testing.T, err error, want errs.Code, target error) {
	t.Helper()
	require.Error(t, err)
	assert.Equal(t, want, errs.CodeOf(err), "%v", err)
	if target != nil {
		assert.True(t, errors.Is(err, target), "%v is not %v", err, target)
	}
}

func testCreateSpecList(t *testing.T, h Harness) {
	s, other := h.New(t)
	ids, err := s.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, ids)
	b, a := create(t, s, 2), create(t, s, 1)
	ids, err = other.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{a, b}, ids, "oldest first")

	got, err := other.Spec(ctx, a)
	require.NoError(t, err)
	got.Path = "" // where a store keeps it is the store's own
	assert.Equal(t, Spec(a), got)
	got.Pool = 99 // a caller's copy: the stored spec never changes
	again, err := s.Spec(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, 4, again.Pool)

	code(t, s.Create(ctx, Spec(a)), errs.InvalidRequest, store.ErrExists)
	_, err = s.Spec(ctx, ID(3))
	code(t, err, errs.InvalidRequest, store.ErrNotFound)
	_, err = s.Spec(ctx, "../../etc")
	code(t, err, errs.InvalidRequest, nil)
	code(t, s.Create(ctx, Spec("../x")), errs.InvalidRequest, nil)

	// A spec written before backend_options reads as if it had them.
	old := Spec(ID(4))
	old.BackendOptions, old.Answers = nil, "/w/old.json"
	require.NoError(t, s.Create(ctx, old))
	got, err = s.Spec(ctx, old.Run)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"answers": "/w/old.json"}, got.BackendOptions)
	assert.Empty(t, got.Answers)
}

func testLeaseIsExclusive(t *testing.T, h Harness) {
	s, other := h.New(t)
	id := create(t, s, 1)
	l, err := s.Acquire(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, id, l.Run())
	assert.NotEmpty(t, l.Token())
	_, err = other.Acquire(ctx, id)
	code(t, err, errs.RunUnavailable, store.ErrHeld)
	_, err = s.Acquire(ctx, id)
	code(t, err, errs.RunUnavailable, store.ErrHeld)

	seq, err := l.Journal().Write(warning("a"), warning("b"))
	require.NoError(t, err)
	assert.Equal(t, uint64(2), seq)
	assert.Equal(t, uint64(3), l.Journal().Append(warning("buffered, committed by Release")))
	require.NoError(t, l.Release())
	require.NoError(t, l.Release(), "a second release is harmless")

	l2, err := other.Acquire(ctx, id)
	require.NoError(t, err)
	defer l2.Release()
	assert.NotEqual(t, l.Token(), l2.Token())
	assert.Equal(t, uint64(3), l2.Journal().LastSeq())
	assert.Equal(t, uint64(3), l2.Journal().DurableSeq())
	seq, err = l2.Journal().Write(warning("c"))
	require.NoError(t, err)
	assert.Equal(t, uint64(4), seq, "seqs go on where the journal ended")
	all, err := l2.Journal().Rows()
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 2, 3, 4}, seqs(all))
	assert.Equal(t, "buffered, committed by Release", all[2].Detail)
	page, err := l2.Journal().Page(2, 2)
	require.NoError(t, err)
	assert.Equal(t, []uint64{2, 3}, seqs(page), "a page is limit rows from its first seq")
	assert.Equal(t, "buffered, committed by Release", page[1].Detail)
	page, err = l2.Journal().Page(4, 10)
	require.NoError(t, err)
	assert.Equal(t, []uint64{4}, seqs(page), "a page ends with the durable rows")
	page, err = l2.Journal().Page(5, 10)
	require.NoError(t, err)
	assert.Empty(t, page, "past the last durable row")
	assert.Equal(t, uint64(5), l2.Journal().Append(warning("buffered")))
	page, err = l2.Journal().Page(4, 10)
	require.NoError(t, err)
	assert.Equal(t, []uint64{4}, seqs(page), "a row still buffered is not in a page")
	assert.False(t, all[0].At.IsZero(), "At is set")

	_, err = s.Acquire(ctx, ID(9))
	code(t, err, errs.InvalidRequest, store.ErrNotFound)
}

// testRowsWhileHeld: another process reads a held run's durable rows at once, however many.
func testRowsWhileHeld(t *testing.T, h Harness) {
	s, other := h.New(t)
	id := create(t, s, 1)
	assert.Empty(t, rows(t, other, id, 1), "a new run has no rows")
	l := acquire(t, s, id)
	j := l.Journal()
	const n = 1300 // more than one chunk a holder sends at a time
	batch := make([]*journal.Row, n)
	for i := range batch {
		batch[i] = warning(fmt.Sprint(i + 1))
	}
	_, err := j.Write(batch...)
	require.NoError(t, err)
	j.Append(warning("not durable yet"))

	start := time.Now()
	got := rows(t, other, id, 1)
	assert.Less(t, time.Since(start), 2*time.Second, "a held run's rows are read without waiting for its holder")
	require.Len(t, got, n, "only durable rows")
	for i, r := range got {
		assert.Equal(t, uint64(i+1), r.Seq)
		assert.Equal(t, fmt.Sprint(i+1), r.Detail)
	}
	assert.Equal(t, []uint64{1299, 1300}, seqs(rows(t, other, id, 1299)), "from a seq on")
	assert.Empty(t, rows(t, other, id, 5000))

	// fn's error stops the reading and comes back as it is.
	stop := errors.New("enough")
	count := 0
	err = other.Rows(ctx, id, 1, func(*journal.Row) error {
		count++
		if count == 3 {
			return stop
		}
		return nil
	})
	assert.Same(t, stop, err)
	assert.Equal(t, 3, count)

	require.NoError(t, l.Release())
	assert.Len(t, rows(t, other, id, 1), n+1, "released, the rest was committed")
}

// summary reads a run's summary from s, its Ended time checked apart.
func summary(t *testing.T, s store.Store, id string, ended time.Time) *journal.Summary {
	t.Helper()
	sum, err := s.Summary(ctx, id)
	require.NoError(t, err)
	assert.True(t, sum.Ended.Equal(ended), "ended at %v, want %v", sum.Ended, ended)
	sum.Ended = time.Time{}
	return sum
}

// testSummary: a run's summary covers exactly its durable rows, read by another process
// while the run is held and after, across holders; it counts each call by its newest attempt,
// as the rows fold (journal.Summarize) into.
func testSummary(t *testing.T, h Harness) {
	s, other := h.New(t)
	id := create(t, s, 1)
	assert.Equal(t, journal.NewSummary(), summary(t, other, id, time.Time{}), "a new run's")
	_, err := other.Summary(ctx, ID(9))
	code(t, err, errs.InvalidRequest, store.ErrNotFound)

	tk := func(n int64) *journal.Tokens { return &journal.Tokens{Input: n, Total: n} }
	l := acquire(t, s, id)
	_, err = l.Journal().Write(
		&journal.Row{Type: journal.TypeStarted, Run: id},
		&journal.Row{Type: journal.TypePrepared, Call: "c1", Index: 1},
		&journal.Row{Type: journal.TypeCompleted, Call: "c1", Tokens: tk(3)},
		&journal.Row{Type: journal.TypePrepared, Call: "c2", Index: 2},
		&journal.Row{Type: journal.TypeHeld, Call: "c2", Reason: "engine_paused", Tokens: tk(1)},
	)
	require.NoError(t, err)
	paused := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	l.Journal().Append(&journal.Row{Type: journal.TypeEnded, Status: "paused", At: paused})
	held := &journal.Summary{LastSeq: 5, LastStart: 1, Calls: map[journal.CallStatus]int{"completed": 1, "held": 1}, Tokens: journal.Tokens{Input: 4, Total: 4}}
	assert.Equal(t, held, summary(t, other, id, time.Time{}), "held, and only the durable rows")
	require.NoError(t, l.Release())
	held.LastSeq, held.Status = 6, "paused"
	assert.Equal(t, held, summary(t, other, id, paused), "released, the rest was committed")

	l = acquire(t, other, id)
	ended := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	_, err = l.Journal().Write(
		&journal.Row{Type: journal.TypeStarted, Run: id},
		&journal.Row{Type: journal.TypePrepared, Call: "c2", Index: 2}, // run again: no longer held
		&journal.Row{Type: journal.TypeRefused, Call: "c2", Reason: "host_policy_cyber"},
		&journal.Row{Type: journal.TypePrepared, Call: "c3", Index: 3},
		&journal.Row{Type: journal.TypeSuperseded, Call: "c3"},
		&journal.Row{Type: journal.TypeCompleted, Call: "c7", Tokens: tk(100)}, // never prepared
		&journal.Row{Type: journal.TypeEnded, Status: "failed", At: ended, Error: &journal.RunError{Message: "boom", Code: "invalid_request"}},
	)
	require.NoError(t, err)
	require.NoError(t, l.Release())
	want := &journal.Summary{LastSeq: 13, LastStart: 7, Status: "failed", Error: &journal.RunError{Message: "boom", Code: "invalid_request"},
		Calls: map[journal.CallStatus]int{"completed": 1, "refused": 1, "superseded": 1}, Tokens: journal.Tokens{Input: 4, Total: 4}}
	assert.Equal(t, want, summary(t, s, id, ended))

	folded, err := journal.Summarize(func(fn func(*journal.Row) error) error { return s.Rows(ctx, id, 1, fn) })
	require.NoError(t, err)
	folded.Ended = time.Time{}
	assert.Equal(t, want, folded, "the summary is the fold of the rows")
}

// testResultAsWritten: a run's result and error read back from its summary with the bytes
// its ended row has, <, > and & as they are (encoding/json would write them \u003c, \u003e and
// \u0026: the same value, other bytes, and a status that shows them so).
func testResultAsWritten(t *testing.T, h Harness) {
	s, other := h.New(t)
	id := create(t, s, 1)
	l := acquire(t, s, id)
	result := json.RawMessage(`{"summary":"<b> & <i>","n":[1,2]}`)
	runErr := &journal.RunError{Message: "a <script> & more", Code: "invalid_request"}
	_, err := l.Journal().Write(
		&journal.Row{Type: journal.TypeStarted, Run: id},
		&journal.Row{Type: journal.TypeEnded, Status: "completed", Result: result, Error: runErr},
	)
	require.NoError(t, err)
	require.NoError(t, l.Release())
	for name, st := range map[string]store.Store{"the store": s, "another process": other} {
		sum, err := st.Summary(ctx, id)
		require.NoError(t, err, name)
		assert.Equal(t, string(result), string(sum.Result), "the result, read by %s", name)
		assert.Equal(t, runErr, sum.Error, "the error, read by %s", name)
	}
}

// testOutstanding: what a run has outstanding (its open calls, unknown outcomes, verdicts) is
// read by another process while the run is held and after, without its rows, and is what the
// fold of its rows makes.
func testOutstanding(t *testing.T, h Harness) {
	s, other := h.New(t)
	id := create(t, s, 1)
	empty := &journal.Outstanding{Open: []journal.OpenCall{}, Unknown: []journal.UnknownCall{}, Verdicts: []journal.Verdict{}}
	got, err := other.Outstanding(ctx, id, 10)
	require.NoError(t, err)
	assert.Equal(t, empty, got, "a new run's")
	_, err = other.Outstanding(ctx, ID(9), 10)
	code(t, err, errs.InvalidRequest, store.ErrNotFound)

	l := acquire(t, s, id)
	_, err = l.Journal().Write(
		&journal.Row{Type: journal.TypeStarted, Run: id},
		&journal.Row{Type: journal.TypePrepared, Call: "c1", Index: 1, Node: "n", Role: "executor"},
		&journal.Row{Type: journal.TypeThreadStarted, Call: "c1", ThreadID: "th"},
		&journal.Row{Type: journal.TypeOutcomeUnknown, Call: "c1", Reason: "dispatch_unknown"},
		&journal.Row{Type: journal.TypePrepared, Call: "c2", Index: 2, Node: "m", Role: "reviewer"},
		&journal.Row{Type: journal.TypePrepared, Call: "c3", Index: 3, Node: "m", Role: "reviewer"},
	)
	require.NoError(t, err)
	l.Journal().Append(&journal.Row{Type: journal.TypeCompleted, Call: "c2"}) // not durable
	want := &journal.Outstanding{
		Open:      []journal.OpenCall{{Call: "c2", Seq: 5, Node: "m", Role: "reviewer"}},
		Unknown:   []journal.UnknownCall{{OpenCall: journal.OpenCall{Call: "c1", Seq: 2, Node: "n", Role: "executor", Thread: "th"}, Reason: "dispatch_unknown"}},
		Verdicts:  []journal.Verdict{},
		TotalOpen: 2, TotalUnknown: 1,
	}
	got, err = other.Outstanding(ctx, id, 1)
	require.NoError(t, err)
	assert.Equal(t, want, got, "held: the durable rows', each list cut at 1")
	require.NoError(t, l.Release())
	got, err = other.Outstanding(ctx, id, 10)
	require.NoError(t, err)
	want.Open[0] = journal.OpenCall{Call: "c3", Seq: 6, Node: "m", Role: "reviewer"}
	want.TotalOpen = 1
	assert.Equal(t, want, got, "released, the rest was committed")

	_, idx, err := journal.SummarizeIndexed(func(fn func(*journal.Row) error) error { return s.Rows(ctx, id, 1, fn) })
	require.NoError(t, err)
	assert.Equal(t, want, idx.Outstanding(10), "the index is the fold of the rows")
}

// testSummaryWhenFenced: rows a holder buffered when it lost its lease are in neither the
// journal nor its summary.
func testSummaryWhenFenced(t *testing.T, h Harness) {
	s, other := h.New(t)
	id := create(t, s, 1)
	l := acquire(t, s, id)
	_, err := l.Journal().Write(&journal.Row{Type: journal.TypePrepared, Call: "c1", Index: 1})
	require.NoError(t, err)
	l.Journal().Append(&journal.Row{Type: journal.TypeCompleted, Call: "c1"})
	h.Revoke(t, s, id)
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the holder was not told its lease was lost")
	}
	require.NoError(t, l.Release())
	assert.Equal(t, &journal.Summary{LastSeq: 1, Calls: map[journal.CallStatus]int{}}, summary(t, other, id, time.Time{}))
}

func testPublished(t *testing.T, h Harness) {
	s, other := h.New(t)
	id := create(t, s, 1)
	st, held, err := other.Published(ctx, id)
	require.NoError(t, err)
	assert.Nil(t, st)
	assert.False(t, held)

	l := acquire(t, s, id)
	_, held, err = other.Published(ctx, id)
	require.NoError(t, err)
	assert.True(t, held)
	want := &store.Status{Run: id, State: store.StateRunning, Result: json.RawMessage("null"), Calls: store.Counts{journal.StatusCompleted: 2},
		InFlight: 1, Workflow: "/w/wf.js", Backend: "fake", Started: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), PID: 42, LastSeq: 7}
	l.Publish(want)
	got, held, err := other.Published(ctx, id)
	require.NoError(t, err)
	assert.True(t, held)
	assert.Equal(t, want, got)

	require.NoError(t, l.Release())
	got, held, err = other.Published(ctx, id)
	require.NoError(t, err)
	assert.False(t, held)
	assert.Equal(t, want, got, "what was published stays for readers")
}

func testCancelIsStored(t *testing.T, h Harness) {
	s, other := h.New(t)
	id := create(t, s, 1)
	l := acquire(t, s, id)
	select {
	case <-l.Cancelled():
		t.Fatal("cancelled before any request")
	default:
	}
	require.NoError(t, other.RequestCancel(ctx, id))
	select {
	case <-l.Cancelled():
	case <-time.After(5 * time.Second):
		t.Fatal("the holder was not told of the cancel request")
	}
	require.NoError(t, l.Release())
	l2 := acquire(t, s, id)
	select {
	case <-l2.Cancelled():
	default:
		// Not in a while: a script that ends at once would outrun the request.
		t.Fatal("a later holder is not told of the stored request as it takes the lease")
	}
	code(t, s.RequestCancel(ctx, ID(9)), errs.InvalidRequest, store.ErrNotFound)
}

func testLostLeaseIsFenced(t *testing.T, h Harness) {
	s, other := h.New(t)
	id := create(t, s, 1)
	l := acquire(t, s, id)
	_, err := l.Journal().Write(warning("before"))
	require.NoError(t, err)
	l.Journal().Append(warning("buffered when the lease is lost"))
	h.Revoke(t, s, id)
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the holder was not told its lease was lost")
	}
	assert.Zero(t, l.Journal().Append(warning("after")), "a fenced journal takes no row")
	err = l.Journal().Sync(l.Journal().LastSeq())
	assert.True(t, errors.Is(err, store.ErrLeaseLost), "%v", err)
	_, err = l.Journal().Write(warning("after"))
	assert.True(t, errors.Is(err, store.ErrLeaseLost), "%v", err)

	// Another holder takes the run over; the old one's Release writes nothing.
	l2 := acquire(t, other, id)
	require.NoError(t, l.Release())
	got, err := l2.Journal().Rows()
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "before", got[0].Detail)
}

func testDelete(t *testing.T, h Harness) {
	s, other := h.New(t)
	id, keep := create(t, s, 1), create(t, s, 2)
	l := acquire(t, s, id)
	require.NoError(t, s.Records(id, store.KindInbox).Put(ctx, "r1", []byte(`{}`)))
	called := false
	code(t, other.Delete(ctx, id, func(string) error { called = true; return nil }), errs.RunUnavailable, store.ErrHeld)
	assert.False(t, called, "a held run's cleanup is not called")
	require.NoError(t, l.Release())

	// A cleanup that fails stops the delete, nothing removed; while it runs, no process can
	// take the run.
	failed := errors.New("the worktrees could not be removed")
	err := other.Delete(ctx, id, func(dir string) error {
		_, err := s.Acquire(ctx, id)
		code(t, err, errs.RunUnavailable, store.ErrHeld)
		return failed
	})
	require.ErrorIs(t, err, failed)
	_, err = s.Spec(ctx, id)
	require.NoError(t, err, "the run is still there")
	require.NoError(t, s.Records(id, store.KindInbox).Put(ctx, "r2", []byte(`{}`)))

	var cleaned []string
	require.NoError(t, other.Delete(ctx, id, func(dir string) error { cleaned = append(cleaned, dir); return nil }))
	require.Len(t, cleaned, 1, "cleanup runs once")
	l2 := acquire(t, s, keep)
	assert.Equal(t, l2.Dir() != "", cleaned[0] != "", "cleanup gets the run's folder when the store keeps one")
	require.NoError(t, l2.Release())
	ids, err := s.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{keep}, ids)
	_, err = s.Spec(ctx, id)
	code(t, err, errs.InvalidRequest, store.ErrNotFound)
	code(t, s.Rows(ctx, id, 1, func(*journal.Row) error { return nil }), errs.InvalidRequest, store.ErrNotFound)
	_, err = s.Records(id, store.KindInbox).Get(ctx, "r1")
	code(t, err, errs.InvalidRequest, store.ErrNotFound)
	code(t, s.Delete(ctx, id, nil), errs.InvalidRequest, store.ErrNotFound)
	// The id can be used again.
	require.NoError(t, s.Create(ctx, Spec(id)))
	assert.Empty(t, rows(t, s, id, 1))
}

func testFilesByDigest(t *testing.T, h Harness) {
	s, other := h.New(t)
	data := []byte("export default async function main() {}\n")
	sum := sha256.Sum256(data)
	digest, err := s.PutFile(ctx, data)
	require.NoError(t, err)
	assert.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), digest)
	again, err := s.PutFile(ctx, data)
	require.NoError(t, err)
	assert.Equal(t, digest, again, "content kept once")
	got, err := other.File(ctx, digest)
	require.NoError(t, err)
	assert.Equal(t, data, got)
	empty, err := s.PutFile(ctx, nil)
	require.NoError(t, err)
	got, err = s.File(ctx, empty)
	require.NoError(t, err)
	assert.Empty(t, got)
	_, err = s.File(ctx, "sha256:"+hex.EncodeToString(make([]byte, 32)))
	code(t, err, errs.RunUnavailable, store.ErrNotFound)
	_, err = s.File(ctx, "sha256:../../etc/passwd")
	require.Error(t, err)
}

func testRecords(t *testing.T, h Harness) {
	s, other := h.New(t)
	id := create(t, s, 1)
	for _, scope := range []string{"", id} {
		for _, kind := range store.Kinds {
			r, o := s.Records(scope, kind), other.Records(scope, kind)
			require.NoError(t, r.Put(ctx, "b-2", []byte(`{"n":2}`)))
			require.NoError(t, r.Put(ctx, "a-1", []byte(`{"n":1}`)))
			require.NoError(t, r.Put(ctx, "b-1", []byte(`{"n":0}`)))
			require.NoError(t, r.Put(ctx, "b-1", []byte(`{"n":3}`)), "put replaces")
			got, err := o.Get(ctx, "b-1")
			require.NoError(t, err)
			assert.JSONEq(t, `{"n":3}`, string(got))
			list, err := o.List(ctx, "b-")
			require.NoError(t, err)
			require.Len(t, list, 2)
			assert.Equal(t, []string{"b-1", "b-2"}, []string{list[0].Key, list[1].Key}, "key order")
			all, err := o.List(ctx, "")
			require.NoError(t, err)
			assert.Len(t, all, 3)

			require.NoError(t, r.Create(ctx, "once", []byte(`{"first":true}`)))
			code(t, o.Create(ctx, "once", []byte(`{"first":false}`)), errs.IdempotencyConflict, store.ErrExists)
			got, err = r.Get(ctx, "once")
			require.NoError(t, err)
			assert.JSONEq(t, `{"first":true}`, string(got), "what was created once stays")

			require.NoError(t, o.Delete(ctx, "a-1"))
			require.NoError(t, o.Delete(ctx, "a-1"), "deleting what is gone is no error")
			_, err = r.Get(ctx, "a-1")
			assert.True(t, errors.Is(err, store.ErrNotFound), "%v", err)
			for _, bad := range []string{"", "../x", "a/b", ".hidden", string(make([]byte, 200))} {
				code(t, r.Put(ctx, bad, []byte(`{}`)), errs.InvalidRequest, nil)
			}
		}
	}
	// Records of different kinds and scopes are apart.
	got, err := s.Records(id, store.KindDecisions).List(ctx, "")
	require.NoError(t, err)
	assert.Len(t, got, 3)
	code(t, s.Records(ID(9), store.KindInbox).Put(ctx, "k", []byte(`{}`)), errs.InvalidRequest, store.ErrNotFound)
}

func testLog(t *testing.T, h Harness) {
	s, _ := h.New(t)
	id := create(t, s, 1)
	for _, scope := range []string{"", id} {
		l := s.Log(scope)
		assert.NotEmpty(t, l.Name())
		require.NoError(t, l.Append([]byte(`{"correlationId":"crw-1","cause":"x"}`)))
		require.NoError(t, l.Append([]byte("second\n")))
	}
	assert.NotEqual(t, s.Log("").Name(), s.Log(id).Name(), "a run's log is its own")
}

// testConcurrentAppenders: rows appended from many goroutines get every seq once, and are
// durable in seq order.
func testConcurrentAppenders(t *testing.T, h Harness) {
	s, other := h.New(t)
	id := create(t, s, 1)
	l := acquire(t, s, id)
	j := l.Journal()
	done := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < 50; i++ {
				seq := j.Append(warning("x"))
				if err := j.Sync(seq); err != nil {
					done <- err
					return
				}
				if j.DurableSeq() < seq {
					done <- fmt.Errorf("row %d synced but not durable", seq)
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		require.NoError(t, <-done)
	}
	got := rows(t, other, id, 1)
	require.Len(t, got, 400)
	for i, r := range got {
		assert.Equal(t, uint64(i+1), r.Seq)
	}
}
