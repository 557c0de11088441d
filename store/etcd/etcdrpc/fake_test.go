package etcdrpc

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serve is a gRPC server of the test's on 127.0.0.1 (HTTP/2 without TLS), for what a real
// member will not do on demand: refuse a watch, answer as no gRPC server would.
func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h, Protocols: new(http.Protocols)}
	srv.Protocols.SetUnencryptedHTTP2(true)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// answer writes a gRPC response: msg (when not nil), then the status in the trailers.
func answer(w http.ResponseWriter, msg []byte, status, message string) {
	w.Header().Set("Content-Type", "application/grpc")
	w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
	if msg != nil {
		_, _ = w.Write(frame(msg))
	}
	w.Header().Set("Grpc-Status", status)
	w.Header().Set("Grpc-Message", message)
}

// TestARefusedWatchEnds: a watch etcd refuses as it creates it (a permission denied: one
// response, created and cancelled) ends with that response and its reason, though its caller
// did not ask to hear of its creation.
func TestARefusedWatchEnds(t *testing.T) {
	addr := serve(t, func(w http.ResponseWriter, r *http.Request) {
		var m []byte
		m = putBool(m, 3, true)
		m = putBool(m, 4, true)
		m = putBytes(m, 6, []byte("etcdserver: permission denied"))
		w.Header().Set("Content-Type", "application/grpc")
		_, _ = w.Write(frame(m))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	c, err := New(Config{Endpoints: []string{addr}, ProbeEvery: time.Hour})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := c.Watch(ctx, "k")
	resp, ok := <-w
	require.True(t, ok, "the refusal is said")
	assert.True(t, resp.Canceled)
	require.Error(t, resp.Err())
	assert.Contains(t, resp.Err().Error(), "permission denied")
	_, ok = <-w
	assert.False(t, ok, "and the watch ends")
	assert.NoError(t, ctx.Err(), "before its context did")
}

// TestAnAnswerOfNoGRPCServerIsUnavailable: a member's address answered by something else (a
// proxy's 503 and its text) is a member that did not answer, left for the next, not an
// answer of etcd's.
func TestAnAnswerOfNoGRPCServerIsUnavailable(t *testing.T) {
	var proxied atomic.Int64
	proxy := serve(t, func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("upstream connect error"))
	})
	member := serve(t, func(w http.ResponseWriter, r *http.Request) {
		answer(w, putInt(nil, 4, 1), "0", "") // a count of 1
	})
	c, err := New(Config{Endpoints: []string{proxy, member}})
	require.NoError(t, err)
	defer c.Close()
	got, err := c.Get(context.Background(), "k")
	require.NoError(t, err, "the read went on to the next member")
	assert.Equal(t, int64(1), got.Count)
	assert.Equal(t, int64(1), proxied.Load())

	c, err = New(Config{Endpoints: []string{proxy}})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Put(context.Background(), "k", "v")
	require.Error(t, err)
	assert.Equal(t, CodeUnavailable, CodeOf(err), "%v", err)
}

// TestATokenRefusedIsTakenAgain: a request refused for its token (one older than the last
// change of users) authenticates again, once, and is sent again with the new token; the
// authentication itself goes without one.
func TestATokenRefusedIsTakenAgain(t *testing.T) {
	var auths atomic.Int64
	addr := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case authenticatePath:
			assert.Empty(t, r.Header.Get("Token"), "an authentication sends no token")
			n := auths.Add(1)
			answer(w, putBytes(nil, 2, []byte(map[int64]string{1: "old", 2: "new"}[n])), "0", "")
		case "/etcdserverpb.KV/Range":
			if r.Header.Get("Token") != "new" {
				answer(w, nil, "3", "etcdserver: revision of auth store is old")
				return
			}
			answer(w, putInt(nil, 4, 7), "0", "")
		}
	})
	c, err := New(Config{Endpoints: []string{addr}, Username: "u", Password: "p"})
	require.NoError(t, err)
	defer c.Close()
	got, err := c.Get(context.Background(), "k")
	require.NoError(t, err)
	assert.Equal(t, int64(7), got.Count)
	assert.Equal(t, int64(2), auths.Load())
}

// TestAFrameLongerThanItsDataIsTruncated: a message whose header claims more than the stream
// holds is an error, read as it comes rather than allocated from the header.
func TestAFrameLongerThanItsDataIsTruncated(t *testing.T) {
	addr := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		_, _ = w.Write([]byte{0, 0x0f, 0xff, 0xff, 0xff, 1, 2, 3}) // 256 MiB said, 3 bytes sent
	})
	c, err := New(Config{Endpoints: []string{addr}})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Get(context.Background(), "k")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "truncated")
}

// TestAKeepAliveFindsTheMemberThatAnswers: with the first two members silent, a lease of the
// shortest TTL is kept alive past it at the third: each member is given its share of the
// time before the lease's end, not a whole RequestTimeout.
func TestAKeepAliveFindsTheMemberThatAnswers(t *testing.T) {
	silent := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	var kept atomic.Int64
	healthy := func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "true", r.Header.Get("Hasleader"), "a keepalive requires a leader")
		kept.Add(1)
		var m []byte
		m = putInt(m, 2, 42)
		m = putInt(m, 3, 2)
		answer(w, m, "0", "")
	}
	c, err := New(Config{Endpoints: []string{serve(t, silent), serve(t, silent), serve(t, healthy)}})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	alive, err := c.KeepAlive(ctx, 42)
	require.NoError(t, err, "the first keepalive reaches the third member")
	began := time.Now()
	for time.Since(began) < 3*time.Second { // one and a half TTLs
		_, ok := <-alive
		require.True(t, ok, "the lease was let go %v after its first keepalive", time.Since(began))
	}
	assert.GreaterOrEqual(t, kept.Load(), int64(4))
}

// TestAShortTransactionAnswerIsRefused: a transaction answered with fewer responses than the
// branch it took has operations (or of other kinds) is an error, not a response the store
// would read past the end of.
func TestAShortTransactionAnswerIsRefused(t *testing.T) {
	addr := serve(t, func(w http.ResponseWriter, r *http.Request) {
		answer(w, putBool(nil, 2, true), "0", "") // succeeded, no response
	})
	c, err := New(Config{Endpoints: []string{addr}})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Txn(context.Background()).Then(OpGet("a"), OpPut("b", "c")).Commit()
	require.Error(t, err)
	assert.Equal(t, codeBadResponse, CodeOf(err))
	assert.Contains(t, err.Error(), "2 operations answered with 0 responses")
}
