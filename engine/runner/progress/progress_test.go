package progress_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

type source struct {
	mu  sync.Mutex
	now progress.Snapshot
}

func (s *source) Snapshot() progress.Snapshot { s.mu.Lock(); defer s.mu.Unlock(); return s.now }
func (s *source) set(now progress.Snapshot)   { s.mu.Lock(); defer s.mu.Unlock(); s.now = now }

// published keeps what a Progress published.
type published struct {
	mu   sync.Mutex
	seen []*store.Status
}

func (p *published) publish(st *store.Status) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, st)
}
func (p *published) last() *store.Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[len(p.seen)-1]
}

func TestTheStatusSaysWhatTheRunWaitsFor(t *testing.T) {
	src, pub := &source{}, &published{}
	p := progress.New(progress.Config{Run: "r1", Workflow: "wf.js", Backend: "fake", Source: src, Publish: pub.publish})
	stop := p.PublishLoop()
	defer stop()
	assert.Equal(t, store.StateRunning, pub.last().State)

	ask := []journal.PendingDecision{{ID: "ship", Question: "Ship?"}}
	src.set(progress.Snapshot{InFlight: 1, Decisions: ask})
	p.CallEnded(progress.Event{Kind: progress.EventCallEnded, Call: "c1", Status: journal.StatusCompleted})
	stop()
	end := p.PublishEnded(&store.Status{Status: store.RunWaitingDecision})
	assert.Equal(t, store.StateWaitingDecision, end.State)
	assert.Equal(t, ask, end.Decisions)
	assert.Equal(t, 1, end.Calls.Total())

	src.set(progress.Snapshot{Decisions: ask})
	p.PublishStopped(errors.New("the journal failed"))
	st := pub.last()
	assert.Equal(t, store.StateStopped, st.State)
	require.NotNil(t, st.Error)
	assert.Equal(t, "the journal failed", st.Error.Text())
	assert.Equal(t, "process_stopped", st.Error.Reason)
}

func TestARunningRunPausedOrWaitingSaysSo(t *testing.T) {
	src, pub := &source{}, &published{}
	p := progress.New(progress.Config{Run: "r1", Source: src, Publish: pub.publish})
	for _, c := range []struct {
		now  progress.Snapshot
		want store.State
	}{
		{progress.Snapshot{InFlight: 2}, store.StateRunning},
		{progress.Snapshot{Paused: true}, store.StatePaused},
		{progress.Snapshot{InFlight: 1, Decisions: []journal.PendingDecision{{ID: "d"}}}, store.StateRunning},
		{progress.Snapshot{Decisions: []journal.PendingDecision{{ID: "d"}}}, store.StateWaitingDecision},
	} {
		src.set(c.now)
		stop := p.PublishLoop() // publishes at once
		stop()
		assert.Equal(t, c.want, pub.last().State, "%+v", c.now)
	}
}

func TestEventsGoOutInTheOrderTheyHappened(t *testing.T) {
	var got []string
	p := progress.New(progress.Config{Run: "r1", Source: &source{}, Publish: func(*store.Status) {},
		OnEvent: func(e progress.Event) { got = append(got, string(e.Kind)+":"+e.Call) }})
	p.Event(progress.Event{Kind: progress.EventStarted})
	p.CallEnded(progress.Event{Kind: progress.EventCallEnded, Call: "c1", Status: journal.StatusCompleted})
	p.CallEnded(progress.Event{Kind: progress.EventCallEnded, Call: "c2", Status: journal.StatusHeld})
	assert.Equal(t, []string{"started:"}, got, "ended calls wait for Flush")
	p.Flush()
	p.Event(progress.Event{Kind: progress.EventEnded})
	assert.Equal(t, []string{"started:", "call_ended:c1", "call_ended:c2", "ended:"}, got)
}
