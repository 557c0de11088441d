package keys_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/keys"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

func answer(v string) *mcp.CallToolResult {
	return &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"run":"` + v + `"}`)}
}

// TestAKeyAnotherHostTookGetsThatHostsAnswer: servers of two hosts share the store's records
// (an etcd cluster) but no lock. The request host B gets while host A's request with the same
// key is under way waits for it and answers with its result, doing nothing itself.
func TestAKeyAnotherHostTookGetsThatHostsAnswer(t *testing.T) {
	t.Parallel()
	recs := mem.New().Records("", store.KindIdempotency)
	seen := &seeing{Records: recs, pending: make(chan struct{})}
	a := keys.NewOn(recs, t.TempDir(), "host-a", time.Minute)
	b := keys.NewOn(seen, t.TempDir(), "host-b", time.Minute)
	began, release := make(chan struct{}), make(chan struct{})
	type done struct {
		res *mcp.CallToolResult
		err error
	}
	fromA := make(chan done, 1)
	go func() {
		res, _, err := a.Do(context.Background(), "start", "k1", "d1", func() *mcp.CallToolResult {
			close(began)
			<-release
			return answer("r-a")
		})
		fromA <- done{res, err}
	}()
	<-began
	var ranB atomic.Bool
	fromB := make(chan done, 1)
	go func() {
		res, replayed, err := b.Do(context.Background(), "start", "k1", "d1", func() *mcp.CallToolResult {
			ranB.Store(true)
			return answer("r-b")
		})
		assert.True(t, replayed || err != nil, "host B's answer is host A's, replayed")
		fromB <- done{res, err}
	}()
	<-seen.pending // host B found host A's request under way
	close(release)
	gotA, gotB := <-fromA, <-fromB
	require.NoError(t, gotA.err)
	require.NoError(t, gotB.err)
	assert.False(t, ranB.Load(), "host B did the mutation too")
	assert.JSONEq(t, `{"run":"r-a"}`, string(gotB.res.StructuredContent.(json.RawMessage)))

	// Another request with the key, on either host, is refused as a conflict.
	_, _, err := b.Do(context.Background(), "start", "k1", "other", func() *mcp.CallToolResult { return answer("x") })
	e, ok := errs.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, errs.IdempotencyConflict, e.Code)
}

// seeing are records that tell when a read first finds a key's request under way.
type seeing struct {
	store.Records
	pending chan struct{}
	once    sync.Once
}

func (r *seeing) Get(ctx context.Context, key string) ([]byte, error) {
	data, err := r.Records.Get(ctx, key)
	var rec struct{ Done bool }
	if err == nil && json.Unmarshal(data, &rec) == nil && !rec.Done {
		r.once.Do(func() { close(r.pending) })
	}
	return data, err
}

// TestAKeyAnotherHostNeverEndsIsUnknown: a request whose key another host took and never
// finished (its server stopped: no lock of this host tells) waits its time, then says that
// what the first request did is unknown, doing nothing.
func TestAKeyAnotherHostNeverEndsIsUnknown(t *testing.T) {
	t.Parallel()
	recs := mem.New().Records("", store.KindIdempotency)
	a := keys.NewOn(recs, t.TempDir(), "host-a", time.Minute)
	b := keys.NewOn(recs, t.TempDir(), "host-b", 100*time.Millisecond)
	stuck := make(chan struct{})
	defer close(stuck)
	began := make(chan struct{})
	go func() {
		_, _, _ = a.Do(context.Background(), "resume", "k2", "d2", func() *mcp.CallToolResult {
			close(began)
			<-stuck
			return answer("r-a")
		})
	}()
	<-began
	ran := false
	_, _, err := b.Do(context.Background(), "resume", "k2", "d2", func() *mcp.CallToolResult { ran = true; return answer("r-b") })
	e, ok := errs.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, errs.RunUnavailable, e.Code)
	require.NotNil(t, e.Diagnostic)
	assert.Equal(t, "request_outcome_unknown", e.Diagnostic.Reason)
	assert.Contains(t, e.Detail, "host-a")
	assert.False(t, ran)
}

// racing are records whose first Get misses a record another host creates right after it:
// the key is taken between this host's look and its claim.
type racing struct {
	store.Records
	missed atomic.Bool
	other  []byte
}

func (r *racing) Get(ctx context.Context, key string) ([]byte, error) {
	if r.missed.CompareAndSwap(false, true) {
		if err := r.Records.Create(ctx, key, r.other); err != nil {
			return nil, err
		}
		return nil, store.ErrNotFound
	}
	return r.Records.Get(ctx, key)
}

// TestAKeyTakenBetweenTheLookAndTheClaim: another host creates the key's record between this
// host's reading and its claim: the claim fails, and this host answers with the other's
// result instead of doing the mutation a second time.
func TestAKeyTakenBetweenTheLookAndTheClaim(t *testing.T) {
	t.Parallel()
	other, err := json.Marshal(map[string]any{"at": time.Now().UTC(), "tool": "answer", "digest": "d3", "host": "host-a", "done": true, "result": json.RawMessage(`{"run":"r-a"}`)})
	require.NoError(t, err)
	recs := &racing{Records: mem.New().Records("", store.KindIdempotency), other: other}
	b := keys.NewOn(recs, t.TempDir(), "host-b", time.Minute)
	ran := false
	res, replayed, err := b.Do(context.Background(), "answer", "k3", "d3", func() *mcp.CallToolResult { ran = true; return answer("r-b") })
	require.NoError(t, err)
	assert.True(t, replayed)
	assert.False(t, ran, "the mutation was done a second time")
	assert.JSONEq(t, `{"run":"r-a"}`, string(res.StructuredContent.(json.RawMessage)))
}
