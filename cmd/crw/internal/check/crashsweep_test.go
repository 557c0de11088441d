package check

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/runtime/lint"
	"github.com/crw-dev/crw/store/mem"
)

// TestACrashAfterAnyCommitChangesNothing: a schedule crashes after one commit, drawn from how
// many commits its run made, and how many that is depends on how the journal's writes were
// grouped; so each of these schedules is rehearsed with a crash after every commit of its run
// instead. Every one ends as the run without the crash does, the generation in the fake ids
// aside (schedules 14, 16, 22 and 23 rate limit call 2 while call 3 waits for the pool: a crash
// that loses call 3's held row makes the resume run it as its first generation).
func TestACrashAfterAnyCommitChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := mem.New()
	svc := &engine.Service{Store: st, Backends: backend.NewRegistry(fake.Descriptor())}
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: filepath.Join("testdata", "recorded.js"), OmitCallSeqs: true, Lint: lint.New(inputs.CheckSchema)})
	require.NoError(t, err)
	c := &faultCheck{workflow: "recorded.js", from: st, id: id, maxCalls: 1000}
	crashes := 0
	for seed := uint64(10); seed <= 25; seed++ {
		sched := Schedule{Seed: seed}
		base, err := c.rehearse(ctx, sched, 0)
		require.NoError(t, err)
		require.NotNil(t, base.end, "schedule %d ends", seed)
		for at := uint64(1); at < base.commits; at++ {
			crashed, err := c.rehearse(ctx, sched, at)
			require.NoError(t, err)
			require.NotNil(t, crashed.end, "schedule %d, crash after commit %d: %v %s", seed, at, crashed.err, crashed.stuck)
			crashes++
			if !sameEnd(base.end, crashed.end) {
				path, after, without, _ := resultDifference(crashed.end, base.end)
				t.Errorf("schedule %d (%s), crash after commit %d of %d: the result differs at %s: %s after the crash, %s without",
					seed, Describe(base.faults, 0), at, base.commits, path, after, without)
			}
		}
	}
	assert.Greater(t, crashes, 80)
}
