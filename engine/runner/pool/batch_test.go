package pool

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// journalCount stands for a journal that counts the calls announced to it and not withdrawn.
type journalCount struct {
	mu              sync.Mutex
	announced, open int
	pool            *Pool
	freeAtExpect    []int // the pool's free slots at each announcement
}

func (j *journalCount) Expect() func() {
	if j.pool != nil {
		j.pool.mu.Lock()
		j.freeAtExpect = append(j.freeAtExpect, j.pool.free)
		j.pool.mu.Unlock()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.announced++
	j.open++
	var once sync.Once
	return func() {
		once.Do(func() {
			j.mu.Lock()
			j.open--
			j.mu.Unlock()
		})
	}
}

func (j *journalCount) counts() (int, int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.announced, j.open
}

// TestABatchStartsTheCallsIssuedTogetherTogether: nothing is submitted until the loop runs the
// one callback the batch posted; then every call is announced before the first starts, in issue
// order; those the pool cannot admit at once withdraw at once, and those it admits when they
// withdraw.
func TestABatchStartsTheCallsIssuedTogetherTogether(t *testing.T) {
	var posted []func() error
	j := &journalCount{pool: New(2)}
	b := &Batch{Pool: j.pool, Post: func(fn func() error) { posted = append(posted, fn) }, Expect: j.Expect}
	ctx := context.Background()

	var mu sync.Mutex
	var started []int
	var seen [][2]int
	release := make(chan struct{})
	var ran sync.WaitGroup
	ran.Add(3)
	for i := range 3 {
		b.Add(ctx, func(err error, withdraw func()) {
			defer ran.Done()
			assert.NoError(t, err)
			a, o := j.counts()
			mu.Lock()
			started, seen = append(started, i), append(seen, [2]int{a, o})
			mu.Unlock()
			<-release
			withdraw()
			b.Pool.Release()
		})
	}
	require.Len(t, posted, 1, "one callback for the calls of the callbacks at hand")
	a, _ := j.counts()
	assert.Zero(t, a, "nothing announced before the loop's callbacks are done")
	require.NoError(t, posted[0]())
	assert.Equal(t, []int{2, 2, 2}, j.freeAtExpect, "every call announced before the first is submitted")
	a, o := j.counts()
	assert.Equal(t, 3, a)
	assert.Equal(t, 2, o, "the call the pool keeps waiting withdrew")
	close(release)
	ran.Wait()
	assert.ElementsMatch(t, []int{0, 1, 2}, started)
	for _, s := range seen[:2] {
		assert.Equal(t, 3, s[0], "every call announced before any starts")
	}
	_, o = j.counts()
	assert.Zero(t, o)

	// The next callbacks' calls post again.
	b.Add(ctx, func(error, func()) {})
	assert.Len(t, posted, 2)
	b.Abandon(errors.New("ended"))
}

// TestABatchWithoutALoopSubmitsAtOnce, and Abandon starts what is queued with its error
// without the pool.
func TestABatchWithoutALoopSubmitsAtOnce(t *testing.T) {
	b := &Batch{Pool: New(1)}
	done := make(chan error, 2)
	b.Add(context.Background(), func(err error, withdraw func()) { withdraw(); done <- err })
	assert.NoError(t, <-done)

	var posted int
	b.Post = func(func() error) { posted++ }
	stop := errors.New("the loop ended")
	b.Add(context.Background(), func(err error, withdraw func()) { withdraw(); done <- err })
	b.Abandon(stop)
	assert.ErrorIs(t, <-done, stop)
	assert.Equal(t, 1, posted)
	assert.Equal(t, 0, b.Pool.free, "an abandoned call takes no slot; the first still holds its own")
}
