// Package eventloop runs the callbacks of one goja runtime on one goroutine.
//
// Unlike goja_nodejs's loop, it counts reservations: work started from the loop that will come
// back later (an agent call answered by another goroutine) keeps the loop alive until it has been
// delivered, so a promise settled from Go is never lost when the queue happens to be empty.
package eventloop

import (
	"context"
	"errors"
	"sync"
)

// ErrStopped is returned by Start when the loop was stopped before its work ended.
var ErrStopped = errors.New("event loop stopped")

// Loop is a queue of callbacks run in order on the goroutine that called Start.
type Loop struct {
	idle     func()
	after    func()
	mu       sync.Mutex
	queue    []func() error
	reserved int
	wakeup   chan struct{}
}

// New returns an idle loop.
func New() *Loop {
	return &Loop{wakeup: make(chan struct{}, 1)}
}

// Reserve announces a callback that will be enqueued later, from any goroutine. It must be
// called on the loop goroutine. The returned enqueue must be called exactly once; the loop does
// not finish while a reservation is open. Callbacks run in the order enqueue is called.
func (l *Loop) Reserve() (enqueue func(func() error)) {
	l.mu.Lock()
	l.reserved++
	l.mu.Unlock()
	var once sync.Once
	return func(fn func() error) {
		once.Do(func() {
			l.mu.Lock()
			l.queue = append(l.queue, fn)
			l.reserved--
			l.mu.Unlock()
			l.signal()
		})
	}
}

// Post enqueues fn from any goroutine without a reservation: it runs in its turn if the loop is
// still running, and never once the loop has ended. It keeps no loop alive, so it suits what
// only marks the order in which something reached the loop (a result nobody may wait for).
func (l *Loop) Post(fn func() error) {
	l.mu.Lock()
	l.queue = append(l.queue, fn)
	l.mu.Unlock()
	l.signal()
}

// Wake makes a loop that waits for a reservation look again: it runs its idle function once
// more. It may be called from any goroutine.
func (l *Loop) Wake() { l.signal() }

func (l *Loop) signal() {
	select {
	case l.wakeup <- struct{}{}:
	default:
	}
}

// SetIdle registers fn to run on the loop goroutine whenever the queue is empty while
// reservations are open, before the loop waits for them: a host that holds results back (to
// deliver them in a recorded order) can release one there instead of waiting forever.
func (l *Loop) SetIdle(fn func()) { l.idle = fn }

// SetAfter registers fn to run on the loop goroutine after first and after each callback: a
// host that watches the script's state (has its entry function's promise settled?) looks there.
func (l *Loop) SetAfter(fn func()) { l.after = fn }

// Start runs first and then every enqueued callback until the queue is empty and no reservation
// is open, a callback returns an error, or ctx ends. It returns the first error.
func (l *Loop) Start(ctx context.Context, first func() error) error {
	if err := first(); err != nil {
		return err
	}
	if l.after != nil {
		l.after()
	}
	for {
		l.mu.Lock()
		batch := l.queue
		l.queue = nil
		reserved := l.reserved
		l.mu.Unlock()
		if len(batch) == 0 {
			if reserved == 0 {
				return nil
			}
			if l.idle != nil {
				l.idle()
				l.mu.Lock()
				queued := len(l.queue)
				l.mu.Unlock()
				if queued > 0 {
					continue
				}
			}
			select {
			case <-l.wakeup:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		for i, fn := range batch {
			if err := fn(); err != nil {
				// Keep what was not run so Pending reports it truthfully.
				l.mu.Lock()
				l.queue = append(batch[i+1:], l.queue...)
				l.mu.Unlock()
				return err
			}
			if l.after != nil {
				l.after()
			}
		}
	}
}

// Pending reports the reservations still open and the callbacks not yet run.
func (l *Loop) Pending() (reserved, queued int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reserved, len(l.queue)
}
