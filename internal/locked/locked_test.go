package locked_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crw-dev/crw/internal/locked"
)

func TestReadWaitsForTheLock(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	n := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				mu.Lock()
				n++
				mu.Unlock()
				_ = locked.Read(&mu, &n)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 8000, locked.Read(&mu, &n))
	assert.True(t, mu.TryLock(), "Read lets the lock go")
}
