package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
)

// TestAChangeToARunAProcessHoldsIsRunUnavailable: a resume with a change (other answers, a
// budget) of a run another process holds is refused as any resume of it is: run_unavailable,
// the code of a run held by a live process, not a request that was wrong.
func TestAChangeToARunAProcessHoldsIsRunUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, id := enginetest.Created(t, `export default async function main() { return "done"; }`)
	lease, err := svc.Store.Acquire(ctx, id)
	require.NoError(t, err)
	defer lease.Release()

	budget := int64(100)
	err = svc.ChangeResume(ctx, id, engine.ResumeChange{BudgetTokens: &budget}, "t")
	e, ok := errs.As(err)
	require.True(t, ok, "a coded error: %v", err)
	assert.Equal(t, errs.RunUnavailable, e.Code, "%v", err)
	assert.Contains(t, e.Error(), "held by another live process")
}
