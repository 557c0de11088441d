package eventloop_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/runtime/eventloop"
)

func TestReservationKeepsLoopAlive(t *testing.T) {
	t.Parallel()
	l := eventloop.New()
	ran := false
	err := l.Start(context.Background(), func() error {
		enqueue := l.Reserve()
		go func() {
			time.Sleep(30 * time.Millisecond)
			enqueue(func() error { ran = true; return nil })
		}()
		return nil
	})
	require.NoError(t, err)
	assert.True(t, ran, "Start returned before the reserved callback ran")
	r, q := l.Pending()
	assert.Zero(t, r)
	assert.Zero(t, q)
}

func TestNothingReservedEndsAtOnce(t *testing.T) {
	t.Parallel()
	l := eventloop.New()
	calls := 0
	require.NoError(t, l.Start(context.Background(), func() error { calls++; return nil }))
	assert.Equal(t, 1, calls)
}

func TestFirstError(t *testing.T) {
	t.Parallel()
	l := eventloop.New()
	boom := errors.New("boom")
	err := l.Start(context.Background(), func() error {
		l.Reserve()(func() error { t.Error("a callback ran after first failed"); return nil })
		return boom
	})
	require.ErrorIs(t, err, boom)
	r, q := l.Pending()
	assert.Zero(t, r)
	assert.Equal(t, 1, q)
}

func TestCallbacksRunInEnqueueOrder(t *testing.T) {
	t.Parallel()
	l := eventloop.New()
	var got []int
	const n = 20
	err := l.Start(context.Background(), func() error {
		enqueues := make([]func(func() error), n)
		for i := range enqueues {
			enqueues[i] = l.Reserve()
		}
		// Enqueue from other goroutines in reverse reservation order, one after another.
		go func() {
			for i := n - 1; i >= 0; i-- {
				done := make(chan struct{})
				go func() {
					defer close(done)
					enqueues[i](func() error { got = append(got, i); return nil })
				}()
				<-done
			}
		}()
		return nil
	})
	require.NoError(t, err)
	want := make([]int, n)
	for i := range want {
		want[i] = n - 1 - i
	}
	assert.Equal(t, want, got)
}

func TestCallbackMayReserveMore(t *testing.T) {
	t.Parallel()
	l := eventloop.New()
	var got []string
	err := l.Start(context.Background(), func() error {
		enqueue := l.Reserve()
		go enqueue(func() error {
			got = append(got, "a")
			next := l.Reserve()
			go next(func() error { got = append(got, "b"); return nil })
			return nil
		})
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, got)
}

func TestEnqueueTwiceRunsOnce(t *testing.T) {
	t.Parallel()
	l := eventloop.New()
	calls := 0
	err := l.Start(context.Background(), func() error {
		enqueue := l.Reserve()
		enqueue(func() error { calls++; return nil })
		enqueue(func() error { calls += 10; return nil })
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 1, calls)
	r, q := l.Pending()
	assert.Zero(t, r)
	assert.Zero(t, q)
}

func TestCallbackErrorStopsLoop(t *testing.T) {
	t.Parallel()
	l := eventloop.New()
	boom := errors.New("boom")
	var ran []string
	err := l.Start(context.Background(), func() error {
		a, b, c := l.Reserve(), l.Reserve(), l.Reserve()
		l.Reserve() // never enqueued
		a(func() error { ran = append(ran, "a"); return boom })
		b(func() error { ran = append(ran, "b"); return nil })
		c(func() error { ran = append(ran, "c"); return nil })
		return nil
	})
	require.ErrorIs(t, err, boom)
	assert.Equal(t, []string{"a"}, ran)
	r, q := l.Pending()
	assert.Equal(t, 1, r, "the reservation never enqueued")
	assert.Equal(t, 2, q, "b and c were not run")
}

func TestContextCancel(t *testing.T) {
	t.Parallel()
	l := eventloop.New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- l.Start(ctx, func() error {
			l.Reserve() // never enqueued: the loop would wait forever
			return nil
		})
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(time.Minute):
		t.Fatal("Start did not return after ctx was cancelled")
	}
	r, q := l.Pending()
	assert.Equal(t, 1, r)
	assert.Zero(t, q)
}

func TestContextDeadline(t *testing.T) {
	t.Parallel()
	l := eventloop.New()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := l.Start(ctx, func() error { l.Reserve(); return nil })
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestPromiseSettledFromGoroutine is the case goja_nodejs's Run loses: a promise whose only
// pending work is a goroutine that will settle it later.
func TestPromiseSettledFromGoroutine(t *testing.T) {
	t.Parallel()
	rt := goja.New()
	l := eventloop.New()
	var log []string
	require.NoError(t, rt.Set("record", func(s string) { log = append(log, s) }))
	require.NoError(t, rt.Set("later", func(v string) *goja.Promise {
		p, resolve, _ := rt.NewPromise()
		enqueue := l.Reserve()
		go func() {
			time.Sleep(20 * time.Millisecond)
			enqueue(func() error { return resolve(v) })
		}()
		return p
	}))
	var result goja.Value
	err := l.Start(context.Background(), func() error {
		v, err := rt.RunString(`(async () => {
			const a = await later("a");
			record(a);
			const [b, c] = await Promise.all([later("b"), later("c")]);
			record(b + c);
			return a + b + c;
		})()`)
		result = v
		return err
	})
	require.NoError(t, err)
	p, ok := result.Export().(*goja.Promise)
	require.True(t, ok)
	require.Equal(t, goja.PromiseStateFulfilled, p.State())
	assert.Equal(t, "abc", p.Result().String())
	assert.Equal(t, []string{"a", "bc"}, log)
}

func TestPendingIsSafeFromOtherGoroutines(t *testing.T) {
	t.Parallel()
	l := eventloop.New()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				l.Pending()
			}
		}
	}()
	err := l.Start(context.Background(), func() error {
		for i := 0; i < 50; i++ {
			go l.Reserve()(func() error { return nil })
		}
		return nil
	})
	close(stop)
	wg.Wait()
	require.NoError(t, err)
}

// TestWakeRunsIdleAgain: a loop that waits for a reservation runs its idle function once
// more when woken; there the host releases what it held back.
func TestWakeRunsIdleAgain(t *testing.T) {
	t.Parallel()
	l := eventloop.New()
	var mu sync.Mutex
	var held func()
	idles := 0
	l.SetIdle(func() {
		mu.Lock()
		defer mu.Unlock()
		idles++
		if held != nil {
			held()
			held = nil
		}
	})
	done := false
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := l.Start(ctx, func() error {
		enqueue := l.Reserve()
		go func() {
			// The loop is idle by now; a result arrives and is held back, then the loop is woken.
			time.Sleep(50 * time.Millisecond)
			mu.Lock()
			held = func() { enqueue(func() error { done = true; return nil }) }
			mu.Unlock()
			l.Wake()
		}()
		return nil
	})
	require.NoError(t, err, "without Wake the loop would wait for ctx")
	assert.True(t, done)
	assert.GreaterOrEqual(t, idles, 2)
}

// TestPostRunsInOrder: a post from another goroutine runs in its turn among the enqueued
// callbacks while the loop runs.
func TestPostRunsInOrder(t *testing.T) {
	t.Parallel()
	l := eventloop.New()
	var order []string
	err := l.Start(context.Background(), func() error {
		enqueue := l.Reserve()
		go func() {
			l.Post(func() error { order = append(order, "post"); return nil })
			enqueue(func() error { order = append(order, "reserved"); return nil })
		}()
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"post", "reserved"}, order)
}
