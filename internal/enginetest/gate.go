package enginetest

import (
	"context"
	"sync"

	"github.com/crw-dev/crw/engine/backend"
)

// Gated is a backend whose turns of the calls held matches wait for Open before they run:
// a test keeps a call in flight for exactly as long as it needs, not for a delay a loaded
// machine may outlast.
type Gated struct {
	backend.Backend
	Holds func(backend.Call) bool

	once sync.Once
	open chan struct{}
}

// Gate wraps b, holding the turns of the calls holds matches.
func Gate(b backend.Backend, holds func(backend.Call) bool) *Gated {
	return &Gated{Backend: b, Holds: holds, open: make(chan struct{})}
}

// Open lets the held turns, and every turn after them, run.
func (g *Gated) Open() { g.once.Do(func() { close(g.open) }) }

// Run implements backend.Backend.
func (g *Gated) Run(ctx context.Context, t backend.Turn, rec backend.Recorder) backend.Outcome {
	if g.Holds(t.Call) {
		select {
		case <-g.open:
		case <-ctx.Done():
		}
	}
	return g.Backend.Run(ctx, t, rec)
}
