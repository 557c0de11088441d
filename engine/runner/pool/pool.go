// Package pool admits a run's calls: at most n at once, in the order they were issued.
package pool

import (
	"context"
	"sync"
)

// Pool admits at most n calls at once, in the order they were issued. A call waiting for its
// turn is a queued function, not a goroutine: a script that issues 50,000 calls at once must
// not make the run hold 50,000 goroutine stacks, only what the calls themselves are.
type Pool struct {
	mu      sync.Mutex
	free    int
	waiters []func(error) // in issue order
	watched bool          // a watch on the run's context is in place
}

// New returns a Pool of n slots.
func New(n int) *Pool { return &Pool{free: n} }

// Submit runs start on a goroutine of its own once the pool admits the call, with nil, or, when
// ctx ends before it is admitted, with ctx's error: the call gives up its place. A call
// admitted must release its slot when it is done. Submit reports whether start was run at
// once, admitted: false when the call waits for a slot (or gave up its place).
func (p *Pool) Submit(ctx context.Context, start func(admitErr error)) (admitted bool) {
	p.mu.Lock()
	if !p.watched {
		p.watched = true
		context.AfterFunc(ctx, p.giveUp(ctx))
	}
	switch {
	case ctx.Err() != nil:
		p.mu.Unlock()
		go spawn(start, ctx.Err())
		return false
	case p.free > 0 && len(p.waiters) == 0:
		p.free--
		p.mu.Unlock()
		go spawn(start, nil)
		return true
	default:
		p.waiters = append(p.waiters, start)
		p.mu.Unlock()
		return false
	}
}

// giveUp tells every call still waiting that ctx ended, one after the other on one goroutine,
// in issue order.
func (p *Pool) giveUp(ctx context.Context) func() {
	return func() {
		p.mu.Lock()
		waiting := p.waiters
		p.waiters = nil
		p.mu.Unlock()
		for _, start := range waiting {
			start(ctx.Err())
		}
	}
}

// Release frees a slot: the next call waiting takes it.
func (p *Pool) Release() {
	p.mu.Lock()
	if len(p.waiters) > 0 {
		start := p.waiters[0]
		p.waiters[0] = nil
		p.waiters = p.waiters[1:]
		p.mu.Unlock()
		go spawn(start, nil)
		return
	}
	p.free++
	p.mu.Unlock()
}

// spawn is a call's goroutine: its stack grown to 16 KiB while it is all but empty, then the
// call. The journal's row encoder (goccy/go-json's VM) needs more than a goroutine's first
// 8 KiB, and growing there copied and adjusted a deep stack: 8% of a run's CPU at 16 calls in
// flight.
func spawn(start func(error), admitErr error) {
	growStack()
	start(admitErr)
}

//go:noinline
func growStack() byte {
	var pad [8 << 10]byte
	return padByte(pad[:])
}

//go:noinline
func padByte(b []byte) byte { return b[len(b)-1] }
