package etcd_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/etcdtest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/etcd"
	"github.com/crw-dev/crw/store/etcd/etcdrpc"
	"github.com/crw-dev/crw/store/storetest"
)

// TestContract holds the etcd store to the store contract, on one cluster: each test a store on
// a prefix of its own, and another process's view of it through a client of its own.
func TestContract(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli, otherCli := c.Client(t), c.Client(t)
	var stores atomic.Int64
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) (store.Store, store.Store) {
			ctx := context.Background()
			prefix := fmt.Sprintf("/crw-test/%d", stores.Add(1))
			s, err := etcd.Open(ctx, cli, prefix)
			require.NoError(t, err)
			other, err := etcd.Open(ctx, otherCli, prefix)
			require.NoError(t, err)
			t.Cleanup(func() { s.Close(); other.Close() })
			return s, other
		},
		// A lease is lost when its etcd lease is revoked, as one that expired is.
		Revoke: func(t *testing.T, s store.Store, run string) {
			ctx := context.Background()
			got, err := cli.Get(ctx, s.(*etcd.Store).Prefix()+"/runs/"+run+"/owner")
			require.NoError(t, err)
			require.Len(t, got.Kvs, 1, "the run is not held")
			id, err := strconvLease(string(got.Kvs[0].Value))
			require.NoError(t, err)
			_, err = cli.Revoke(ctx, id)
			require.NoError(t, err)
		},
	})
}

// stores is a store on a cluster of its own, another process's view of it, and a client.
func stores(t *testing.T) (s, other *etcd.Store, cli *etcdrpc.Client) {
	t.Helper()
	c := etcdtest.Start(t, 1)
	cli = c.Client(t)
	ctx := context.Background()
	s, err := etcd.Open(ctx, cli, "/crw")
	require.NoError(t, err)
	other, err = etcd.Open(ctx, c.Client(t), "/crw")
	require.NoError(t, err)
	return s, other, cli
}

// callRows are the rows of calls c<from> to c<to>: each prepared and its thread started, and
// with end, its terminal row too.
func callRows(from, to int, end string) []*journal.Row {
	var rows []*journal.Row
	for i := from; i <= to; i++ {
		call := fmt.Sprintf("c%d", i)
		rows = append(rows,
			&journal.Row{Type: journal.TypePrepared, Call: call, Index: i, Node: "n", Role: "executor"},
			&journal.Row{Type: journal.TypeThreadStarted, Call: call, ThreadID: "th-" + call})
		if end != "" {
			rows = append(rows, &journal.Row{Type: end, Call: call, Tokens: &journal.Tokens{Input: 1, Total: 1}, Reason: "dispatch_unknown"})
		}
	}
	return rows
}

// folded checks that the run's summary and what it has outstanding, as another process reads
// them, are the fold of its durable rows; it returns the summary.
func folded(t *testing.T, s store.Store, id string) *journal.Summary {
	t.Helper()
	ctx := context.Background()
	sum, idx, err := journal.SummarizeIndexed(func(fn func(*journal.Row) error) error { return s.Rows(ctx, id, 1, fn) })
	require.NoError(t, err)
	got, err := s.Summary(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, sum, got, "the summary is the fold of the rows")
	for _, limit := range []int{0, 3, 1000} {
		out, err := s.Outstanding(ctx, id, limit)
		require.NoError(t, err)
		want := idx.Outstanding(limit)
		want.Commits = sum.Commits
		assert.Equal(t, want, out, "what is outstanding (limit %d) is the fold of the rows", limit)
	}
	return got
}

func revoke(t *testing.T, cli *etcdrpc.Client, l store.Lease) {
	t.Helper()
	id, err := strconvLease(l.Token())
	require.NoError(t, err)
	_, err = cli.Revoke(context.Background(), id)
	require.NoError(t, err)
}

// TestASplitBatchIsSummarizedPerTransaction: a batch of many calls' rows is cut into
// transactions within etcd's operation limit, each with its rows' summary and index, so a
// holder that loses its lease between two of them leaves a summary and an index that are the
// fold of the rows it committed; the next holder folds on from the index it reads back.
func TestASplitBatchIsSummarizedPerTransaction(t *testing.T) {
	s, other, cli := stores(t)
	ctx := context.Background()
	id := storetest.ID(1)
	require.NoError(t, s.Create(ctx, storetest.Spec(id)))
	l, err := s.Acquire(ctx, id)
	require.NoError(t, err)
	defer l.Release()
	var txns []uint64
	etcd.AfterTxn(l, func(last uint64) { txns = append(txns, last) })
	_, err = l.Journal().Write(callRows(1, 120, journal.TypeCompleted)...) // 360 rows, 3 index keys a call
	require.NoError(t, err)
	assert.Greater(t, len(txns), 3, "cut within 128 operations a transaction: %v", txns)
	sum := folded(t, other, id)
	assert.Equal(t, map[journal.CallStatus]int{journal.StatusCompleted: 120}, sum.Calls)

	// The lease ends after the next batch's first transaction.
	txns = nil
	etcd.AfterTxn(l, func(last uint64) {
		txns = append(txns, last)
		if len(txns) == 1 {
			revoke(t, cli, l)
		}
	})
	_, err = l.Journal().Write(callRows(121, 300, "")...)
	require.ErrorIs(t, err, store.ErrLeaseLost)
	require.Len(t, txns, 1)
	sum = folded(t, other, id)
	assert.Equal(t, txns[0], sum.LastSeq, "the summary covers the rows of the transaction that succeeded")
	out, err := other.Outstanding(ctx, id, 0)
	require.NoError(t, err)
	assert.Positive(t, out.TotalOpen)
	require.NoError(t, l.Release())

	// Another process ends the open calls: some unknown, one of those given a verdict, in
	// one batch whose calls it reads back from the index.
	l2, err := other.Acquire(ctx, id)
	require.NoError(t, err)
	defer l2.Release()
	var rows []*journal.Row
	all, err := other.Outstanding(ctx, id, 1000)
	require.NoError(t, err)
	for i, o := range all.Open {
		typ := journal.TypeCompleted
		if i%3 == 0 {
			typ = journal.TypeOutcomeUnknown
		}
		rows = append(rows, &journal.Row{Type: typ, Call: o.Call, Reason: "dispatch_unknown", Tokens: &journal.Tokens{Input: 2, Total: 2}})
	}
	rows = append(rows, &journal.Row{Type: journal.TypeEffectReconciled, Effect: all.Open[0].Call, Verdict: "applied", By: "op"})
	_, err = l2.Journal().Write(rows...)
	require.NoError(t, err)
	folded(t, other, id)
	out, err = s.Outstanding(ctx, id, 1000)
	require.NoError(t, err)
	assert.Zero(t, out.TotalOpen)
	assert.Equal(t, (len(all.Open)+2)/3-1, out.TotalUnknown)
	assert.Equal(t, 1, out.TotalVerdicts)
}

// TestALogReadsByOffset: a log's lines read back whole from any line's offset, a bounded
// amount at a time, and its size; a run that does not exist takes no line.
func TestALogReadsByOffset(t *testing.T) {
	s, other, _ := stores(t)
	ctx := context.Background()
	id := storetest.ID(1)
	require.NoError(t, s.Create(ctx, storetest.Spec(id)))
	for _, scope := range []string{"", id} {
		l, o := s.Log(scope), other.Log(scope)
		size, err := o.Size()
		require.NoError(t, err)
		assert.Zero(t, size)
		lines, next, err := o.Read(0, 100)
		require.NoError(t, err)
		assert.Empty(t, lines)
		assert.Zero(t, next)
		var want []byte
		for i := range 50 {
			line := fmt.Sprintf(`{"n":%d,"scope":%q}`, i, scope)
			require.NoError(t, l.Append([]byte(line+"\n")))
			want = append(want, line+"\n"...)
		}
		size, err = o.Size()
		require.NoError(t, err)
		assert.Equal(t, int64(len(want)), size)
		var got []byte
		for off := int64(0); ; {
			lines, next, err := o.Read(off, 100)
			require.NoError(t, err)
			if next == off {
				break
			}
			assert.LessOrEqual(t, len(lines), 100)
			assert.Equal(t, byte('\n'), lines[len(lines)-1], "whole lines")
			got, off = append(got, lines...), next
		}
		assert.Equal(t, string(want), string(got))
		lines, next, err = o.Read(size+10, 100)
		require.NoError(t, err)
		assert.Empty(t, lines)
		assert.Equal(t, size+10, next)
	}
	err := s.Log(storetest.ID(9)).Append([]byte("x"))
	assert.ErrorIs(t, err, store.ErrNotFound)
}

// TestAnswersAreTakenOnce: the holder takes the answers in the order they were put, once.
func TestAnswersAreTakenOnce(t *testing.T) {
	s, other, _ := stores(t)
	ctx := context.Background()
	id := storetest.ID(1)
	require.NoError(t, s.Create(ctx, storetest.Spec(id)))
	l, err := s.Acquire(ctx, id)
	require.NoError(t, err)
	defer l.Release()
	for i := range 5 {
		require.NoError(t, other.PutAnswer(ctx, id, store.Answer{ID: fmt.Sprintf("d%d", i), Value: []byte(`true`), By: "op"}))
	}
	got, err := l.TakeAnswers()
	require.NoError(t, err)
	var ids []string
	for _, a := range got {
		ids = append(ids, a.ID)
	}
	assert.Equal(t, []string{"d0", "d1", "d2", "d3", "d4"}, ids)
	got, err = l.TakeAnswers()
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.ErrorIs(t, other.PutAnswer(ctx, storetest.ID(9), store.Answer{ID: "x"}), store.ErrNotFound)
}

// TestListReadsItsIdsAPageAtATime: List reads the ids a range of listPage keys at a time, all of
// them, in order, whatever the page size says.
func TestListReadsItsIdsAPageAtATime(t *testing.T) {
	s, _, _ := stores(t)
	etcd.SetListPage(t, 3)
	ctx := context.Background()
	var want []string
	for i := 1; i <= 10; i++ {
		id := storetest.ID(i)
		require.NoError(t, s.Create(ctx, storetest.Spec(id)))
		want = append(want, id)
	}
	slices.Sort(want)
	got, err := s.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// TestALargeFileIsStoredInChunks: a file past one etcd value (a 3 MiB workflow bundle) is kept
// in chunks and read back whole; a small file that reads like a reference to chunks, and an
// empty one, come back as they were; a chunk changed behind the store's back is an error
// naming the file.
func TestALargeFileIsStoredInChunks(t *testing.T) {
	s, other, cli := stores(t)
	ctx := context.Background()
	big := []byte(strings.Repeat("export const x = 1;\n", 3<<20/20))
	for _, data := range [][]byte{big, []byte("crw-chunks 1 5 not-a-digest"), {}} {
		digest, err := s.PutFile(ctx, data)
		require.NoError(t, err)
		got, err := other.File(ctx, digest)
		require.NoError(t, err)
		assert.Equal(t, string(data), string(got), "%.30q", data)
	}
	digest, err := s.PutFile(ctx, big)
	require.NoError(t, err)
	_, err = cli.Put(ctx, "/crw/filechunks/"+digest+"/0001", strings.Repeat("y", 1<<20))
	require.NoError(t, err)
	_, err = other.File(ctx, digest)
	require.Error(t, err)
	assert.Equal(t, errs.IncompatibleSchema, errs.CodeOf(err), "%v", err)
	assert.Contains(t, err.Error(), digest)
}

// A key a member answers outside the range it was asked for (no etcd does; a broken or hostile
// member might) is refused as the cluster's fault, where the store sliced it by the prefix's
// length and panicked on a key shorter than the prefix.
func TestAKeyOutsideTheRangeReadIsRefused(t *testing.T) {
	for key, want := range map[string]string{
		"crw/runs/20261207-1": "20261207-1",
		"crw/runs/":           "",
	} {
		got, err := etcd.Under([]byte(key), "crw/runs/")
		require.NoError(t, err, key)
		assert.Equal(t, want, got, key)
	}
	for _, key := range []string{"", "c", "crw/run", "crw/logs/x", "crx/runs/20261207-1"} {
		_, err := etcd.Under([]byte(key), "crw/runs/")
		var e *errs.Error
		require.ErrorAs(t, err, &e, "%q", key)
		assert.Equal(t, errs.RunUnavailable, e.Code, "%q", key)
		assert.Contains(t, e.Error(), fmt.Sprintf("%q", key))
	}
}
