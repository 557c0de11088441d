package fake_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
)

// recorder keeps what the backend reported.
type recorder struct {
	mu      sync.Mutex
	reports []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports = append(r.reports, s)
}
func (r *recorder) Commit() error              { r.add("commit"); return nil }
func (r *recorder) Thread(th backend.Thread)   { r.add("thread " + th.ID) }
func (r *recorder) Started(id string)          { r.add("started " + id) }
func (r *recorder) Warn(reason, detail string) { r.add("warn " + reason) }

func answers(t *testing.T, js string) *fake.Answers {
	t.Helper()
	a, err := fake.ParseAnswers("answers.json", []byte(js))
	require.NoError(t, err)
	return a
}

var call = backend.Call{ID: "c1", Index: 1, Attempt: 1, Role: "explorer", Node: "n"}

func TestSendCommitsFirstAndTheHostCounts(t *testing.T) {
	t.Parallel()
	host := fake.NewHost("")
	b := fake.New(answers(t, `{"answers": [{"turns": [{"text": "hi"}]}]}`), host)
	rec := &recorder{}
	out := b.Run(context.Background(), backend.Turn{Call: call, K: 1, Prompt: "say hi"}, rec)
	assert.Equal(t, backend.Answered, out.Status)
	assert.Equal(t, "hi", out.Text)
	assert.Equal(t, "fake-c1-t1", out.TurnID)
	assert.Equal(t, []string{"thread fake-c1", "commit", "started fake-c1-t1"}, rec.reports)
	assert.Equal(t, map[string]int{"fake-c1-t1": 1}, host.Received())
	assert.Equal(t, "say hi", host.Prompt("fake-c1-t1"))

	// A second attempt of the call runs on a thread of its own.
	second := call
	second.Attempt = 2
	rec = &recorder{}
	b.Run(context.Background(), backend.Turn{Call: second, K: 1, Prompt: "say hi"}, rec)
	assert.Equal(t, []string{"thread fake-c1-a2", "commit", "started fake-c1-a2-t1"}, rec.reports)
}

// TestReconciledDelayCountsFromTheSend: a turn an earlier process sent is answered when it was
// always going to be, its delay counted from the send, not from the reconcile; and it is not
// sent again.
func TestReconciledDelayCountsFromTheSend(t *testing.T) {
	t.Parallel()
	host := fake.NewHost("")
	b := fake.New(answers(t, `{"answers": [{"turns": [{"text": "late", "delay_ms": 3000}]}]}`), host)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rec := &recorder{}
	th := backend.Thread{ID: "fake-c1"}
	sent := &backend.Sent{TurnID: "fake-c1-t1", At: time.Now().Add(-2900 * time.Millisecond)}
	out := b.Run(ctx, backend.Turn{Call: call, K: 1, Prompt: "p", Thread: th, Sent: sent}, rec)
	require.Equal(t, backend.Answered, out.Status, "due 100 ms after the reconcile, well before the 2 s the test waits")
	assert.Equal(t, "late", out.Text)
	assert.Empty(t, rec.reports, "nothing committed, sent or reported: the turn and its id are recorded")
	assert.Empty(t, host.Received())

	// The sender died before recording the turn's id: the reconcile reports it.
	rec = &recorder{}
	sent = &backend.Sent{At: time.Now().Add(-3 * time.Second)}
	out = b.Run(ctx, backend.Turn{Call: call, K: 1, Prompt: "p", Thread: th, Sent: sent}, rec)
	assert.Equal(t, backend.Answered, out.Status)
	assert.Equal(t, []string{"started fake-c1-t1"}, rec.reports)

	// A fresh turn waits its whole delay; an ended ctx interrupts it.
	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	out = b.Run(short, backend.Turn{Call: call, K: 1, Prompt: "p"}, &recorder{})
	assert.Equal(t, backend.Interrupted, out.Status)
}

// TestOverdueTurnsComeBackInTheOrderTheyFinished: turns that finished while no process watched,
// reconciled together, are released in the order they finished on the host.
func TestOverdueTurnsComeBackInTheOrderTheyFinished(t *testing.T) {
	t.Parallel()
	b := fake.New(answers(t, `{"answers": [
		{"match": {"node": "a"}, "turns": [{"text": "a", "delay_ms": 300}]},
		{"match": {"node": "b"}, "turns": [{"text": "b", "delay_ms": 100}]},
		{"match": {"node": "c"}, "turns": [{"text": "c", "delay_ms": 200}]}]}`), nil)
	sentAt := time.Now().Add(-time.Second) // all three are overdue
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	for _, node := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := backend.Call{ID: "c-" + node, Index: 1, Attempt: 1, Role: "explorer", Node: node}
			out := b.Run(context.Background(), backend.Turn{Call: c, K: 1, Prompt: node, Thread: backend.Thread{ID: "t-" + node},
				Sent: &backend.Sent{TurnID: "t-" + node + "-t1", At: sentAt}}, &recorder{})
			mu.Lock()
			order = append(order, out.Text)
			mu.Unlock()
		}()
	}
	wg.Wait()
	assert.Equal(t, []string{"b", "c", "a"}, order)
}
