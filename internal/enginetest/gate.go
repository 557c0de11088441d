package enginetest

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/crw-dev/crw/engine/backend"
)

// Gated is a backend whose turns of the calls held matches wait for Open before they run:
// a test keeps a call in flight for exactly as long as it needs, not for a delay a loaded
// machine may outlast.
type Gated struct {
	backend.Backend
	Holds func(backend.Call) bool

	// sent: the held turns are sent first, their answers wait (GateAnswers).
	sent bool
	// openAt: the gate opens by itself once that many held turns were sent (OpenAfter).
	openAt int
	nSent  atomic.Int64
	once   sync.Once
	open   chan struct{}
	// firstSent is closed once a held turn was sent (GateAnswers).
	firstSent chan struct{}
}

// Gate wraps b, holding the turns of the calls holds matches.
func Gate(b backend.Backend, holds func(backend.Call) bool) *Gated {
	return &Gated{Backend: b, Holds: holds, open: make(chan struct{}), firstSent: make(chan struct{})}
}

// FirstSent is closed once a GateAnswers gate held a turn it sent (its turn_started row
// reported): a call is in flight.
func (g *Gated) FirstSent() <-chan struct{} { return g.firstSent }

// GateAnswers wraps b, holding the answers of the turns of the calls holds matches, as a
// delay_ms would but for no set time: each such turn is sent (the host receives it, its
// turn_started row is reported), and its answer waits for Open or for the turn's context to
// end (then the turn is interrupted). A turn an earlier process sent waits the same way before
// it is reconciled. It is for a backend that reports through backend.Recorder only (the fake).
func GateAnswers(b backend.Backend, holds func(backend.Call) bool) *Gated {
	g := Gate(b, holds)
	g.sent = true
	return g
}

// OpenAfter makes a GateAnswers gate open by itself once n held turns were sent (their
// turn_started rows reported): n calls are in flight at once, whatever the machine's load.
func (g *Gated) OpenAfter(n int) *Gated {
	g.openAt = n
	return g
}

// Open lets the held turns, and every turn after them, run.
func (g *Gated) Open() { g.once.Do(func() { close(g.open) }) }

// Run implements backend.Backend.
func (g *Gated) Run(ctx context.Context, t backend.Turn, rec backend.Recorder) backend.Outcome {
	if !g.Holds(t.Call) {
		return g.Backend.Run(ctx, t, rec)
	}
	if g.sent && t.Sent == nil {
		return g.Backend.Run(ctx, t, heldAnswer{Recorder: rec, g: g, ctx: ctx})
	}
	g.wait(ctx)
	return g.Backend.Run(ctx, t, rec)
}

func (g *Gated) wait(ctx context.Context) {
	select {
	case <-g.open:
	case <-ctx.Done():
	}
}

// heldAnswer is the recorder of a turn whose answer waits: once the backend reported the turn
// sent, it waits for the gate before the backend goes on to the answer.
type heldAnswer struct {
	backend.Recorder
	g   *Gated
	ctx context.Context
}

func (r heldAnswer) Started(turnID string) {
	r.Recorder.Started(turnID)
	n := r.g.nSent.Add(1)
	if n == 1 {
		close(r.g.firstSent)
	}
	if r.g.openAt > 0 && n == int64(r.g.openAt) {
		r.g.Open()
	}
	r.g.wait(r.ctx)
}

// Nodes holds the calls of these nodes.
func Nodes(nodes ...string) func(backend.Call) bool {
	return func(c backend.Call) bool {
		for _, n := range nodes {
			if c.Node == n {
				return true
			}
		}
		return false
	}
}
