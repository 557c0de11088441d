package pool

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPoolWaitersAreNotGoroutines: calls waiting for the pool are queued, not parked on
// goroutines of their own (a 50,000-call fan-out held 50,000 stacks); they are admitted in
// issue order as slots free, and those still waiting when the run's context ends give up their
// place, in issue order.
func TestPoolWaitersAreNotGoroutines(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := New(1)
	before := runtime.NumGoroutine()

	var mu sync.Mutex
	var admitted, gaveUp []int
	hold := make(chan struct{})
	var running sync.WaitGroup
	const n = 2000
	running.Add(n)
	for i := range n {
		p.Submit(ctx, func(err error) {
			defer running.Done()
			mu.Lock()
			if err != nil {
				gaveUp = append(gaveUp, i)
				mu.Unlock()
				return
			}
			admitted = append(admitted, i)
			mu.Unlock()
			<-hold
			p.Release()
		})
	}
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(admitted) == 1 }, time.Minute, time.Millisecond)
	assert.Less(t, runtime.NumGoroutine()-before, 20, "goroutines while 1,999 calls wait")

	// Ten more calls get through, one at a time, in order.
	for range 10 {
		hold <- struct{}{}
	}
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(admitted) == 11 }, time.Minute, time.Millisecond)
	cancel()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(gaveUp) == n-11 }, time.Minute, time.Millisecond)
	close(hold)
	running.Wait()
	for i, call := range admitted {
		assert.Equal(t, i, call, "admitted in issue order")
	}
	for i, call := range gaveUp {
		assert.Equal(t, 11+i, call, "gave up in issue order")
	}

	// A call submitted after the context ended is told at once.
	got := make(chan error, 1)
	p.Submit(ctx, func(err error) { got <- err })
	assert.ErrorIs(t, <-got, context.Canceled)
}
