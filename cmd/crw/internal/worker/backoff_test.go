package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestARunThatKeepsFailingWaitsLongerEachTime: a run whose child keeps ending without ending
// it waits 5 s, then 10, 20 … up to 5 minutes before it is taken again.
func TestARunThatKeepsFailingWaitsLongerEachTime(t *testing.T) {
	t.Parallel()
	w := &worker{retry: map[string]backoff{}}
	var got []time.Duration
	for range 9 {
		before := time.Now()
		w.holdOff("r")
		got = append(got, w.retry["r"].delay)
		assert.False(t, w.retry["r"].at.Before(before.Add(w.retry["r"].delay)), "taken again no sooner than its delay")
	}
	s := time.Second
	assert.Equal(t, []time.Duration{5 * s, 10 * s, 20 * s, 40 * s, 80 * s, 160 * s, 300 * s, 300 * s, 300 * s}, got)
}
