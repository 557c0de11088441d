package pool

import "context"

// Start runs a call once the pool admits it (admitErr nil) or when it gives up its place.
// withdraw tells the journal the call will ask for no commit it was announced for; it may be
// called more than once.
type Start func(admitErr error, withdraw func())

// Batch starts the calls a script's loop issues in the callbacks at hand together, once those
// are done. Each call the pool admits at once is announced to the journal first (Expect, a
// store.Expecter's), until it withdraws: a commit the first asks for then waits for the others'
// intents, and a fan-out's calls share one commit and its fsyncs. Add, Flush and Abandon run on
// the loop's goroutine.
type Batch struct {
	Pool *Pool
	// Post hands the loop a callback to run once those at hand are done (the loop's Post);
	// nil: a call is submitted as it is added.
	Post func(func() error)
	// Expect announces a call to the journal; nil when the journal waits for none.
	Expect func() (done func())

	queued []queued
}

type queued struct {
	ctx   context.Context
	start Start
}

// Add queues a call issued now; ctx is the run's, which ends a call still waiting for a slot.
func (b *Batch) Add(ctx context.Context, start Start) {
	b.queued = append(b.queued, queued{ctx, start})
	switch {
	case b.Post == nil:
		b.Flush()
	case len(b.queued) == 1:
		b.Post(func() error {
			b.Flush()
			return nil
		})
	}
}

// Flush submits the queued calls in the order they were issued, each announced before the
// first is submitted; a call the pool does not admit at once withdraws.
func (b *Batch) Flush() {
	calls := b.queued
	b.queued = nil
	withdraw := make([]func(), len(calls))
	for i := range calls {
		withdraw[i] = b.expect()
	}
	for i, q := range calls {
		w := withdraw[i]
		if !b.Pool.Submit(q.ctx, func(admitErr error) { q.start(admitErr, w) }) {
			w() // it waits for a slot: no commit soon
		}
	}
}

// Abandon starts the queued calls, each on a goroutine of its own, with err: a loop that ended
// before it flushed leaves them to end as the calls waiting for a slot end when the run is
// cancelled.
func (b *Batch) Abandon(err error) {
	calls := b.queued
	b.queued = nil
	for _, q := range calls {
		go q.start(err, func() {})
	}
}

func (b *Batch) expect() func() {
	if b.Expect == nil {
		return func() {}
	}
	return b.Expect()
}
