package runner

import (
	"context"
	"sync"
)

// pool admits at most n calls at once, in the order they were issued: a call takes its place in
// the queue on the loop goroutine and waits for its turn off it.
type pool struct {
	mu      sync.Mutex
	free    int
	waiters []chan struct{}
}

func newPool(n int) *pool { return &pool{free: n} }

// enter queues a call; the returned channel is closed when the call is admitted.
func (p *pool) enter() chan struct{} {
	ch := make(chan struct{})
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free > 0 && len(p.waiters) == 0 {
		p.free--
		close(ch)
		return ch
	}
	p.waiters = append(p.waiters, ch)
	return ch
}

// wait waits for admission; when ctx ends first the place is given up.
func (p *pool) wait(ctx context.Context, ch chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		p.mu.Lock()
		defer p.mu.Unlock()
		for i, w := range p.waiters {
			if w == ch {
				p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
				return ctx.Err()
			}
		}
		// Admitted as the context ended: pass the slot on.
		p.releaseLocked()
		return ctx.Err()
	}
}

func (p *pool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked()
}

func (p *pool) releaseLocked() {
	if len(p.waiters) > 0 {
		ch := p.waiters[0]
		p.waiters = p.waiters[1:]
		close(ch)
		return
	}
	p.free++
}
