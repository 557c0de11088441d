package etcdrpc_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/internal/etcdtest"
	"github.com/crw-dev/crw/store/etcd/etcdrpc"
)

func newClient(t *testing.T, c *etcdtest.Cluster, cfg etcdrpc.Config) *etcdrpc.Client {
	t.Helper()
	cfg.Endpoints = c.Endpoints()
	cli, err := etcdrpc.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	return cli
}

func keys(kvs []*etcdrpc.KeyValue) []string {
	var out []string
	for _, kv := range kvs {
		out = append(out, string(kv.Key))
	}
	return out
}

// TestReadsAndWrites: gets with each option the store uses, puts, deletes, against a real
// cluster, with keys and values of every byte.
func TestReadsAndWrites(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli := newClient(t, c, etcdrpc.Config{})
	ctx := context.Background()

	odd := "v\x00\xff<&>\"é"
	for _, k := range []string{"/p/a", "/p/b", "/p/c", "/q/a", "/p\xff"} {
		_, err := cli.Put(ctx, k, odd+k)
		require.NoError(t, err)
	}
	got, err := cli.Get(ctx, "/p/b")
	require.NoError(t, err)
	require.Len(t, got.Kvs, 1)
	assert.Equal(t, odd+"/p/b", string(got.Kvs[0].Value))
	assert.Equal(t, int64(1), got.Kvs[0].Version)
	assert.Equal(t, got.Kvs[0].CreateRevision, got.Kvs[0].ModRevision)
	assert.Greater(t, got.Header.Revision, int64(0))

	got, err = cli.Get(ctx, "/p/", etcdrpc.WithPrefix())
	require.NoError(t, err)
	assert.Equal(t, []string{"/p/a", "/p/b", "/p/c"}, keys(got.Kvs))
	assert.Equal(t, int64(3), got.Count)

	got, err = cli.Get(ctx, "/p/", etcdrpc.WithPrefix(), etcdrpc.WithLimit(2), etcdrpc.WithKeysOnly())
	require.NoError(t, err)
	assert.Equal(t, []string{"/p/a", "/p/b"}, keys(got.Kvs))
	assert.True(t, got.More)
	assert.Empty(t, got.Kvs[0].Value, "keys only")

	got, err = cli.Get(ctx, "/p/", etcdrpc.WithPrefix(), etcdrpc.WithCountOnly())
	require.NoError(t, err)
	assert.Empty(t, got.Kvs)
	assert.Equal(t, int64(3), got.Count)

	got, err = cli.Get(ctx, "/p/", etcdrpc.WithLastKey()...)
	require.NoError(t, err)
	assert.Equal(t, []string{"/p/c"}, keys(got.Kvs))

	got, err = cli.Get(ctx, "/p/a", etcdrpc.WithRange("/p/c"))
	require.NoError(t, err)
	assert.Equal(t, []string{"/p/a", "/p/b"}, keys(got.Kvs))

	got, err = cli.Get(ctx, "/p/", etcdrpc.WithRange(etcdrpc.GetPrefixRangeEnd("/p/")), etcdrpc.WithSort(etcdrpc.SortByKey, etcdrpc.SortDescend), etcdrpc.WithLimit(1))
	require.NoError(t, err)
	assert.Equal(t, []string{"/p/c"}, keys(got.Kvs))

	before := got.Header.Revision
	_, err = cli.Put(ctx, "/p/a", "new")
	require.NoError(t, err)
	got, err = cli.Get(ctx, "/p/a", etcdrpc.WithRev(before))
	require.NoError(t, err)
	assert.Equal(t, odd+"/p/a", string(got.Kvs[0].Value), "read at an earlier revision")

	del, err := cli.Delete(ctx, "/p/", etcdrpc.WithPrefix())
	require.NoError(t, err)
	assert.Equal(t, int64(3), del.Deleted)
	got, err = cli.Get(ctx, "", etcdrpc.WithPrefix())
	require.NoError(t, err)
	assert.Equal(t, []string{"/p\xff", "/q/a"}, keys(got.Kvs), "every key")
	assert.Equal(t, "/q0", etcdrpc.GetPrefixRangeEnd("/q/"))
	assert.Equal(t, "\x00", etcdrpc.GetPrefixRangeEnd("\xff\xff"))
}

// TestTransactions: comparisons of create and mod revisions, versions and values, both
// branches, nested transactions, and each operation's response.
func TestTransactions(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli := newClient(t, c, etcdrpc.Config{})
	ctx := context.Background()

	free := etcdrpc.Compare(etcdrpc.CreateRevision("/o"), "=", 0)
	resp, err := cli.Txn(ctx).If(free).
		Then(etcdrpc.OpPut("/o", "me"), etcdrpc.OpGet("/o"), etcdrpc.OpGet("/none")).
		Else(etcdrpc.OpGet("/o")).Commit()
	require.NoError(t, err)
	require.True(t, resp.Succeeded)
	require.Len(t, resp.Responses, 3)
	assert.NotNil(t, resp.Responses[0].GetResponsePut())
	assert.Equal(t, "me", string(resp.Responses[1].GetResponseRange().Kvs[0].Value))
	assert.Empty(t, resp.Responses[2].GetResponseRange().Kvs)
	rev := resp.Header.Revision

	resp, err = cli.Txn(ctx).If(free).Then(etcdrpc.OpPut("/o", "other")).
		Else(etcdrpc.OpGet("/o"), etcdrpc.OpTxn([]etcdrpc.Cmp{free}, nil, nil)).Commit()
	require.NoError(t, err)
	assert.False(t, resp.Succeeded)
	assert.Equal(t, "me", string(resp.Responses[0].GetResponseRange().Kvs[0].Value))
	assert.False(t, resp.Responses[1].GetResponseTxn().Succeeded, "the nested transaction's comparison")

	for name, cmp := range map[string]etcdrpc.Cmp{
		"create":  etcdrpc.Compare(etcdrpc.CreateRevision("/o"), "=", rev),
		"mod":     etcdrpc.Compare(etcdrpc.ModRevision("/o"), "=", rev),
		"version": etcdrpc.Compare(etcdrpc.Version("/o"), ">", 0),
		"value":   etcdrpc.Compare(etcdrpc.Value("/o"), "=", "me"),
		"absent":  etcdrpc.Compare(etcdrpc.Version("/none"), "=", 0),
	} {
		resp, err := cli.Txn(ctx).If(cmp).Commit()
		require.NoError(t, err, name)
		assert.True(t, resp.Succeeded, name)
	}
	for name, cmp := range map[string]etcdrpc.Cmp{
		"create": etcdrpc.Compare(etcdrpc.CreateRevision("/o"), "=", rev+1),
		"value":  etcdrpc.Compare(etcdrpc.Value("/o"), "!=", "me"),
		"less":   etcdrpc.Compare(etcdrpc.ModRevision("/o"), "<", rev),
	} {
		resp, err := cli.Txn(ctx).If(cmp).Commit()
		require.NoError(t, err, name)
		assert.False(t, resp.Succeeded, name)
	}

	resp, err = cli.Txn(ctx).If(etcdrpc.Compare(etcdrpc.CreateRevision("/o"), "=", rev)).
		Then(etcdrpc.OpDelete("/o"), etcdrpc.OpTxn(nil, []etcdrpc.Op{etcdrpc.OpPut("/n", "x")}, nil)).Commit()
	require.NoError(t, err)
	require.True(t, resp.Succeeded)
	assert.Equal(t, int64(1), resp.Responses[0].GetResponseDeleteRange().Deleted)
	assert.True(t, resp.Responses[1].GetResponseTxn().Succeeded)

	// etcd's own refusals come back as its errors, with their code.
	_, err = cli.Txn(ctx).Then(etcdrpc.OpPut("/d", "1"), etcdrpc.OpPut("/d", "2")).Commit()
	require.Error(t, err)
	assert.Equal(t, etcdrpc.CodeInvalidArgument, etcdrpc.CodeOf(err), "%v", err)
	assert.Contains(t, err.Error(), "duplicate key")
}

// TestLeases: a key put with a lease lives while the lease is kept alive, past its TTL, and
// goes with it when it is revoked; the keepalive's channel closes then.
func TestLeases(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli := newClient(t, c, etcdrpc.Config{})
	ctx := context.Background()

	granted := time.Now()
	grant, err := cli.Grant(ctx, 2)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, grant.TTL, int64(2), "etcd gives at least what was asked")
	_, err = cli.Put(ctx, "/owner", "me", etcdrpc.WithLease(grant.ID))
	require.NoError(t, err)
	alive, err := cli.KeepAlive(ctx, grant.ID)
	require.NoError(t, err)
	<-alive // the first keepalive's
	for n := 0; time.Since(granted) < time.Duration(grant.TTL)*time.Second+time.Second; n++ {
		resp, ok := <-alive // one each third of the TTL
		require.True(t, ok, "keepalive %d", n)
		assert.Equal(t, grant.ID, resp.ID)
		assert.Greater(t, resp.TTL, int64(0))
	}
	got, err := cli.Get(ctx, "/owner")
	require.NoError(t, err)
	require.Len(t, got.Kvs, 1, "kept alive past its TTL")
	assert.Equal(t, int64(grant.ID), got.Kvs[0].Lease)

	_, err = cli.Revoke(ctx, grant.ID)
	require.NoError(t, err)
	got, err = cli.Get(ctx, "/owner")
	require.NoError(t, err)
	assert.Empty(t, got.Kvs, "revoked with its lease")
	for range alive {
	} // closes: the lease is gone
	resp, err := cli.KeepAliveOnce(ctx, grant.ID)
	require.NoError(t, err)
	assert.LessOrEqual(t, resp.TTL, int64(0))
	_, err = cli.KeepAlive(ctx, grant.ID)
	assert.Equal(t, etcdrpc.CodeNotFound, etcdrpc.CodeOf(err), "%v", err)
}

// TestWatches: a watch says when it is in place, sees puts and deletes from a revision on,
// leaves out what its filters say, and closes when its context ends.
func TestWatches(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli := newClient(t, c, etcdrpc.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	first, err := cli.Put(ctx, "/w/a", "1")
	require.NoError(t, err)
	_, err = cli.Put(ctx, "/w/a", "2")
	require.NoError(t, err)
	w := cli.Watch(etcdrpc.WithRequireLeader(ctx), "/w/", etcdrpc.WithPrefix(), etcdrpc.WithRev(first.Header.Revision), etcdrpc.WithCreatedNotify())
	created := <-w
	require.NoError(t, created.Err())
	assert.True(t, created.Created)
	var values []string
	for len(values) < 2 {
		resp := <-w
		require.NoError(t, resp.Err())
		for _, ev := range resp.Events {
			values = append(values, string(ev.Kv.Value))
		}
	}
	assert.Equal(t, []string{"1", "2"}, values, "from the revision given")

	noPut := cli.Watch(ctx, "/w/", etcdrpc.WithPrefix(), etcdrpc.WithFilterPut(), etcdrpc.WithCreatedNotify())
	require.True(t, (<-noPut).Created)
	_, err = cli.Put(ctx, "/w/b", "3")
	require.NoError(t, err)
	_, err = cli.Delete(ctx, "/w/a")
	require.NoError(t, err)
	resp := <-w
	require.Len(t, resp.Events, 1)
	assert.Equal(t, etcdrpc.PUT, resp.Events[0].Type)
	assert.Equal(t, "/w/b", string(resp.Events[0].Kv.Key))
	resp = <-w
	require.Len(t, resp.Events, 1)
	assert.Equal(t, etcdrpc.DELETE, resp.Events[0].Type)
	resp = <-noPut
	require.Len(t, resp.Events, 1, "the put is filtered out")
	assert.Equal(t, etcdrpc.DELETE, resp.Events[0].Type)
	assert.Equal(t, "/w/a", string(resp.Events[0].Kv.Key))

	cancel()
	for r := range w {
		assert.NoError(t, r.Err(), "a watch its caller ends says no error")
	}
}

// followerFirst is a client whose requests go first to a member that does not lead (stopping
// it starts no election, which would hold every request for seconds), and that member.
func followerFirst(t *testing.T, c *etcdtest.Cluster, cfg etcdrpc.Config) (*etcdrpc.Client, *etcdtest.Member) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader, err := c.WaitLeader(ctx, c.AdminClient(t), nil)
	require.NoError(t, err)
	for _, m := range c.Members {
		if m != leader {
			cfg.Endpoints = append(cfg.Endpoints, m.ClientURL)
		}
	}
	cfg.Endpoints = append(cfg.Endpoints, leader.ClientURL)
	follower := c.Members[slices.IndexFunc(c.Members, func(m *etcdtest.Member) bool { return m.ClientURL == cfg.Endpoints[0] })]
	cli, err := etcdrpc.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	return cli, follower
}

// sentTo is a transport that keeps the member each request of a method was sent to.
type sentTo struct {
	http.RoundTripper
	mu    sync.Mutex
	sends map[string][]string // method path → member URLs, in order
}

func newSentTo() *sentTo {
	h2c := &http.Transport{Protocols: new(http.Protocols)} // gRPC without TLS: HTTP/2 from the first byte
	h2c.Protocols.SetUnencryptedHTTP2(true)
	return &sentTo{RoundTripper: h2c, sends: map[string][]string{}}
}

func (s *sentTo) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.sends[req.URL.Path] = append(s.sends[req.URL.Path], req.URL.Scheme+"://"+req.URL.Host)
	s.mu.Unlock()
	return s.RoundTripper.RoundTrip(req)
}

func (s *sentTo) members(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sends[path])
}

// TestAMemberThatStopsIsLeft: with one member SIGSTOPped, requests go to the others (reads
// sent again, a write said Unavailable once, then the next member), and a watch on it ends
// within its probe.
func TestAMemberThatStopsIsLeft(t *testing.T) {
	c := etcdtest.Start(t, 3)
	sent := newSentTo()
	cli, follower := followerFirst(t, c, etcdrpc.Config{RequestTimeout: time.Second, ProbeEvery: 200 * time.Millisecond, Transport: sent})
	ctx := context.Background()
	_, err := cli.Put(ctx, "/k", "v")
	require.NoError(t, err)

	// Requests go to the first member until it fails: stop it.
	w := cli.Watch(etcdrpc.WithRequireLeader(ctx), "/k", etcdrpc.WithCreatedNotify())
	require.True(t, (<-w).Created)
	follower.Stop()
	t.Cleanup(follower.Cont)

	got, err := cli.Get(ctx, "/k")
	require.NoError(t, err, "a read is sent to the next member")
	assert.Equal(t, "v", string(got.Kvs[0].Value))

	_, err = cli.Put(ctx, "/k", "w")
	puts := sent.members("/etcdserverpb.KV/Put")
	require.Len(t, puts, 2, "each write went to one member")
	assert.Equal(t, follower.ClientURL, puts[0], "the first went to the member first in the list")
	assert.NotEqual(t, follower.ClientURL, puts[1], "the requests after the one that found it silent go to another")
	if err != nil {
		// A loaded machine can keep the member that answers the read from committing the write
		// within RequestTimeout: the write is Unavailable then, and it was not sent to the
		// stopped member, which is what this test is about.
		assert.Equal(t, etcdrpc.CodeUnavailable, etcdrpc.CodeOf(err), "%v", err)
		assert.NotContains(t, err.Error(), follower.ClientURL)
		t.Logf("the write was slow: %v", err)
	}

	resp, ok := <-w
	require.True(t, ok)
	require.Error(t, resp.Err(), "the watch on the stopped member ends")
	assert.Equal(t, etcdrpc.CodeUnavailable, etcdrpc.CodeOf(resp.Err()), "%v", resp.Err())
	_, ok = <-w
	assert.False(t, ok)
}

// TestAWriteToAMemberThatStopsIsUnavailable: a write sent to a member that then does not
// answer fails with Unavailable (it may have been applied), not sent again.
func TestAWriteToAMemberThatStopsIsUnavailable(t *testing.T) {
	c := etcdtest.Start(t, 3)
	sent := newSentTo()
	cli, follower := followerFirst(t, c, etcdrpc.Config{RequestTimeout: 500 * time.Millisecond, Transport: sent})
	ctx := context.Background()
	_, err := cli.Get(ctx, "/k")
	require.NoError(t, err)
	follower.Stop()
	t.Cleanup(follower.Cont)
	_, err = cli.Put(ctx, "/k", "v")
	require.Error(t, err)
	assert.Equal(t, etcdrpc.CodeUnavailable, etcdrpc.CodeOf(err), "%v", err)
	assert.Equal(t, []string{follower.ClientURL}, sent.members("/etcdserverpb.KV/Put"), "sent once")

	_, err = cli.Put(ctx, "/k", "v")
	puts := sent.members("/etcdserverpb.KV/Put")
	require.Len(t, puts, 2)
	assert.NotEqual(t, follower.ClientURL, puts[1], "the next goes to the next member")
	if err != nil {
		// A loaded machine can keep that member from committing the write in 500 ms.
		assert.Equal(t, etcdrpc.CodeUnavailable, etcdrpc.CodeOf(err), "%v", err)
		t.Logf("the write was slow: %v", err)
	}
}

// TestAuthentication: a user's client works, a wrong password is said by New, and a client
// without a user is refused.
func TestAuthentication(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	c.EnableAuth(t, "root-secret-1")

	cli := newClient(t, c, etcdrpc.Config{Username: "root", Password: "root-secret-1"})
	_, err := cli.Put(ctx, "/a", "b")
	require.NoError(t, err)
	got, err := cli.Get(ctx, "/a")
	require.NoError(t, err)
	assert.Equal(t, "b", string(got.Kvs[0].Value))

	_, err = etcdrpc.New(etcdrpc.Config{Endpoints: c.Endpoints(), Username: "root", Password: "wrong"})
	require.Error(t, err)
	assert.Contains(t, strings.ToLower(err.Error()), "authentication failed")

	anon := newClient(t, c, etcdrpc.Config{})
	_, err = anon.Get(ctx, "/a")
	require.Error(t, err)
	assert.NotEqual(t, etcdrpc.CodeUnavailable, etcdrpc.CodeOf(err), "refused, not unreachable: %v", err)
}
