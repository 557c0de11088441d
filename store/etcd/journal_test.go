package etcd_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/etcdtest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/etcd"
	"github.com/crw-dev/crw/store/etcd/etcdrpc"
)

const run = "20261205-070000-abc123"

func warnings(n int, detail string) []*journal.Row {
	rows := make([]*journal.Row, n)
	for i := range rows {
		rows[i] = journal.Warning{Reason: "r", Detail: fmt.Sprintf("%s %d", detail, i)}.Row()
	}
	return rows
}

func details(t *testing.T, j store.Journal) []string {
	t.Helper()
	rows, err := j.Rows()
	require.NoError(t, err)
	var out []string
	for i, r := range rows {
		require.Equal(t, uint64(i+1), r.Seq)
		out = append(out, r.Detail)
	}
	return out
}

// TestAJournalIsFencedByItsHolding: a holder whose lease is gone (revoked here, as an expiry
// would) writes nothing more, not even once another process holds the run; the next holder
// goes on from the last durable row.
func TestAJournalIsFencedByItsHolding(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	ctx := context.Background()

	first, err := etcd.Hold(ctx, cli, "/crw", run, 5*time.Second)
	require.NoError(t, err)
	_, err = etcd.Hold(ctx, cli, "/crw", run, 5*time.Second)
	require.ErrorIs(t, err, store.ErrHeld)
	assert.Equal(t, errs.RunUnavailable, errs.CodeOf(err))

	seq, err := first.Journal().Write(warnings(3, "first")...)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), seq)
	late := first.Journal().Append(warnings(1, "late")...)
	require.Equal(t, uint64(4), late)

	// The lease ends under the holder's feet, and another process takes the run.
	id, err := strconvLease(first.Token())
	require.NoError(t, err)
	_, err = cli.Revoke(ctx, id)
	require.NoError(t, err)
	second, err := etcd.Hold(ctx, cli, "/crw", run, 5*time.Second)
	require.NoError(t, err)
	seq, err = second.Journal().Write(warnings(1, "second")...)
	require.NoError(t, err)
	assert.Equal(t, uint64(4), seq, "the next holder goes on after the last durable row")

	err = first.Journal().Sync(late)
	require.ErrorIs(t, err, store.ErrLeaseLost, "the late row is refused")
	<-first.Lost()
	assert.Zero(t, first.Journal().Append(warnings(1, "later")...))
	require.NoError(t, first.Release(ctx))

	assert.Equal(t, []string{"first 0", "first 1", "first 2", "second 0"}, details(t, second.Journal()))
	require.NoError(t, second.Release(ctx))
	again, err := etcd.Hold(ctx, cli, "/crw", run, 5*time.Second)
	require.NoError(t, err, "a released run is free at once")
	assert.Equal(t, uint64(4), again.Journal().LastSeq())
	require.NoError(t, again.Release(ctx))
}

// TestABatchPastOneTransaction: a commit of more rows than one transaction takes, and of rows
// whose bytes pass one transaction's, is several transactions in seq order; the rows read back
// whole, a page at a time too.
func TestABatchPastOneTransaction(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	h, err := etcd.Hold(ctx, c.Client(t), "/crw", run, 5*time.Second)
	require.NoError(t, err)
	defer h.Release(ctx)
	j := h.Journal()
	big := strings.Repeat("x", 300<<10)
	rows := append(warnings(250, "small"), journal.Warning{Reason: "r", Detail: big}.Row(), journal.Warning{Reason: "r", Detail: big}.Row(),
		journal.Warning{Reason: "r", Detail: big}.Row(), journal.Warning{Reason: "r", Detail: big}.Row())
	seq, err := j.Write(rows...)
	require.NoError(t, err)
	require.Equal(t, uint64(254), seq)
	assert.Equal(t, uint64(254), j.DurableSeq())
	got := details(t, j)
	require.Len(t, got, 254)
	assert.Equal(t, "small 249", got[249])
	assert.Equal(t, big, got[253])
	page, err := j.Page(100, 3)
	require.NoError(t, err)
	require.Len(t, page, 3)
	assert.Equal(t, []uint64{100, 101, 102}, []uint64{page[0].Seq, page[1].Seq, page[2].Seq})

	etcd.SetMaxRow(t, 4<<20)
	_, err = j.Write(journal.Warning{Reason: "r", Detail: strings.Repeat("y", 4<<20)}.Row())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "row 255 (warning)")
	assert.Contains(t, err.Error(), "past the")
}

// TestAJournalGoesOnAfterItsLeaderDies: a three-member cluster loses its leader between two
// commits; the holding keeps its lease and the journal commits on under the new leader.
func TestAJournalGoesOnAfterItsLeaderDies(t *testing.T) {
	c := etcdtest.Start(t, 3)
	cli, admin := c.Client(t), c.AdminClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := etcd.Hold(ctx, cli, "/crw", run, 10*time.Second)
	require.NoError(t, err)
	defer h.Release(ctx)
	_, err = h.Journal().Write(warnings(2, "before")...)
	require.NoError(t, err)
	leader, err := c.WaitLeader(ctx, admin, nil)
	require.NoError(t, err)
	leader.Kill()
	_, err = c.WaitLeader(ctx, admin, leader)
	require.NoError(t, err)
	_, err = h.Journal().Write(warnings(2, "after")...)
	require.NoError(t, err)
	select {
	case <-h.Lost():
		t.Fatal("the holding was lost with the leader")
	default:
	}
	assert.Equal(t, []string{"before 0", "before 1", "after 0", "after 1"}, details(t, h.Journal()))
}

func strconvLease(token string) (etcdrpc.LeaseID, error) {
	id, err := strconv.ParseInt(token, 16, 64)
	return etcdrpc.LeaseID(id), err
}

// TestALargeRowIsStoredInChunks: rows past what one etcd value should hold (a 3 MiB prompt, a
// row of a little more than a chunk) are stored in chunks their keys reference, and read back
// whole by the holder, a page and the next holder; a chunk changed behind the journal's back
// is an error naming the row, never a row read wrong; a holder whose lease is gone writes no
// chunk.
func TestALargeRowIsStoredInChunks(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	ctx := context.Background()
	h, err := etcd.Hold(ctx, cli, "/crw", run, 5*time.Second)
	require.NoError(t, err)
	j := h.Journal()
	prompt := strings.Repeat("a long prompt. ", 3<<20/15)
	justPast := strings.Repeat("z", 1<<20+10)
	rows := append(warnings(2, "small"), journal.Warning{Reason: "r", Detail: prompt}.Row(),
		journal.Warning{Reason: "r", Detail: "between"}.Row(), journal.Warning{Reason: "r", Detail: justPast}.Row())
	seq, err := j.Write(rows...)
	require.NoError(t, err)
	require.Equal(t, uint64(5), seq)
	want := []string{"small 0", "small 1", prompt, "between", justPast}
	assert.Equal(t, want, details(t, j))
	page, err := j.Page(3, 2)
	require.NoError(t, err)
	require.Len(t, page, 2)
	assert.Equal(t, prompt, page[0].Detail)

	raw, err := cli.Get(ctx, "/crw/runs/"+run+"/rows/"+fmt.Sprintf("%016x", 3))
	require.NoError(t, err)
	require.Len(t, raw.Kvs, 1)
	assert.True(t, strings.HasPrefix(string(raw.Kvs[0].Value), "crw-chunks 4 "), "row 3's key: %.40q", raw.Kvs[0].Value)
	raw, err = cli.Get(ctx, "/crw/runs/"+run+"/rows/"+fmt.Sprintf("%016x", 4))
	require.NoError(t, err)
	assert.Contains(t, string(raw.Kvs[0].Value), `"between"`, "a small row is its own value")
	require.NoError(t, h.Release(ctx))

	next, err := etcd.Hold(ctx, cli, "/crw", run, 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, want, details(t, next.Journal()))
	require.NoError(t, next.Release(ctx))

	// A chunk of the prompt's row changed to other text of its length: still JSON, another row.
	chunk0 := "/crw/runs/" + run + "/chunks/" + fmt.Sprintf("%016x", 3) + "/0000"
	got, err := cli.Get(ctx, chunk0)
	require.NoError(t, err)
	require.Len(t, got.Kvs, 1)
	_, err = cli.Put(ctx, chunk0, strings.ReplaceAll(string(got.Kvs[0].Value), "a long prompt", "b long prompt"))
	require.NoError(t, err)
	damaged, err := etcd.Hold(ctx, cli, "/crw", run, 5*time.Second)
	require.NoError(t, err)
	_, err = damaged.Journal().Rows()
	require.Error(t, err)
	assert.Equal(t, errs.IncompatibleSchema, errs.CodeOf(err), "%v", err)
	assert.Contains(t, err.Error(), "row 3")

	id, err := strconv.ParseInt(damaged.Token(), 16, 64)
	require.NoError(t, err)
	_, err = cli.Revoke(ctx, etcdrpc.LeaseID(id))
	require.NoError(t, err)
	_, err = damaged.Journal().Write(journal.Warning{Reason: "r", Detail: prompt}.Row())
	require.Error(t, err, "a holder whose lease is gone wrote a large row")
	left, err := cli.Get(ctx, "/crw/runs/"+run+"/chunks/"+fmt.Sprintf("%016x", 6), etcdrpc.WithPrefix(), etcdrpc.WithCountOnly())
	require.NoError(t, err)
	assert.Zero(t, left.Count, "chunks written after the lease was gone")
}

// unsureTransport carries a client's requests, and loses the answers of its next
// transactions as a lost connection does: applied, or not, as the test says, and either way
// not said.
type unsureTransport struct {
	http.RoundTripper
	mu    sync.Mutex
	fails []bool // each next transaction's fate: true applied, false not
}

func (u *unsureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	u.mu.Lock()
	var applied, fail bool
	if req.URL.Path == "/etcdserverpb.KV/Txn" && len(u.fails) > 0 {
		applied, fail = u.fails[0], true
		u.fails = u.fails[1:]
	}
	u.mu.Unlock()
	if !fail {
		return u.RoundTripper.RoundTrip(req)
	}
	if applied {
		res, err := u.RoundTripper.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	return nil, errors.New("connection reset by peer (the test's)")
}

// TestACommitWhoseOutcomeWasNotSaidIsSentAgainOnce: a commit etcd applied but whose answer was
// lost, and one it never applied, are each sent again: the rows are in the journal once each,
// every row key put once (version 1), and the holder goes on writing.
func TestACommitWhoseOutcomeWasNotSaidIsSentAgainOnce(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	ctx := context.Background()
	h2c := &http.Transport{Protocols: new(http.Protocols)} // gRPC without TLS: HTTP/2 from the first byte
	h2c.Protocols.SetUnencryptedHTTP2(true)
	kv := &unsureTransport{RoundTripper: h2c}
	unsure, err := etcdrpc.New(etcdrpc.Config{Endpoints: c.Endpoints(), Transport: kv})
	require.NoError(t, err)
	defer unsure.Close()

	h, err := etcd.Hold(ctx, unsure, "/crw", run, 5*time.Second)
	require.NoError(t, err)
	// The first commit's two index reads and its transaction go first; then a commit applied
	// but not said, then two not applied, then one applied.
	_, err = h.Journal().Write(warnings(1, "plain")...)
	require.NoError(t, err)
	kv.mu.Lock()
	kv.fails = []bool{true, false, false}
	kv.mu.Unlock()
	_, err = h.Journal().Write(warnings(2, "applied unsaid")...)
	require.NoError(t, err, "the lost answer of an applied commit")
	_, err = h.Journal().Write(warnings(1, "sent thrice")...)
	require.NoError(t, err)
	_, err = h.Journal().Write(warnings(1, "after")...)
	require.NoError(t, err)
	require.NoError(t, h.Release(ctx))

	got, err := cli.Get(ctx, "/crw/runs/"+run+"/rows/", etcdrpc.WithPrefix())
	require.NoError(t, err)
	require.Len(t, got.Kvs, 5)
	var rows []string
	for _, kv := range got.Kvs {
		assert.Equal(t, int64(1), kv.Version, "%s put once", kv.Key)
		var r journal.Row
		require.NoError(t, json.Unmarshal(kv.Value, &r))
		rows = append(rows, r.Detail)
	}
	assert.Equal(t, []string{"plain 0", "applied unsaid 0", "applied unsaid 1", "sent thrice 0", "after 0"}, rows)
	next, err := etcd.Hold(ctx, cli, "/crw", run, 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, uint64(5), next.Journal().LastSeq(), "the summary agrees with the rows")
	require.NoError(t, next.Release(ctx))
}

// TestAJournalIsReadAcrossPages: a journal of 1,300 rows (three range reads, read ahead) is read
// whole, from the middle and for a bound across pages, each row once and in order; a read that
// stops early says why; a row missing in a page, or at the end, is named.
func TestAJournalIsReadAcrossPages(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	ctx := context.Background()
	h, err := etcd.Hold(ctx, cli, "/crw", run, 10*time.Second)
	require.NoError(t, err)
	const n = 1300
	_, err = h.Journal().Write(warnings(n, "row")...)
	require.NoError(t, err)

	read := func(from uint64, limit int) (seqs []uint64, err error) {
		err = h.Journal().Each(from, limit, func(r *journal.Row) error {
			if r.Detail != fmt.Sprintf("row %d", r.Seq-1) {
				return fmt.Errorf("row %d says %q", r.Seq, r.Detail)
			}
			seqs = append(seqs, r.Seq)
			return nil
		})
		return seqs, err
	}
	span := func(from, to uint64) []uint64 {
		var out []uint64
		for s := from; s <= to; s++ {
			out = append(out, s)
		}
		return out
	}
	all, err := read(1, 0)
	require.NoError(t, err)
	assert.Equal(t, span(1, n), all)
	mid, err := read(500, 600)
	require.NoError(t, err)
	assert.Equal(t, span(500, 1099), mid, "a bound across two pages")
	tail, err := read(1025, 0)
	require.NoError(t, err)
	assert.Equal(t, span(1025, n), tail)

	stop := errors.New("enough")
	seen := 0
	err = h.Journal().Each(1, 0, func(*journal.Row) error {
		if seen++; seen == 700 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	assert.Equal(t, 700, seen, "no row after the one that stopped it")

	for _, missing := range []uint64{n, 700} { // the last first: each read stops at the first gap
		_, err = cli.Delete(ctx, fmt.Sprintf("/crw/runs/%s/rows/%016x", run, missing))
		require.NoError(t, err)
		_, err = read(1, 0)
		require.Error(t, err)
		assert.Equal(t, errs.IncompatibleSchema, errs.CodeOf(err))
		assert.Contains(t, err.Error(), fmt.Sprintf("row %d is missing", missing))
	}
}
