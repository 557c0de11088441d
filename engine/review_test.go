package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/runner"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// TestASameThreadReviewIsAWarning: seed 003, a reviewer that continues the thread of the work it
// reviews is warned about once (same_thread_review), never refused; a review of a review is
// not, and a resume of the paused run warns no more.
func TestASameThreadReviewIsAWarning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() {
  const work = await agent.call({ role: "architect", node: "a", prompt: "plan" });
  const review = await agent.call({ role: "reviewer", node: "a", prompt: "review the plan", resume: work.handle });
  const again = await agent.call({ role: "critic", node: "a", prompt: "and the review", resume: review.handle });
  const paused = await agent.call({ role: "explorer", node: "b", prompt: "paused" });
  return [review.status, again.status, paused.status];
}
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	a, err := fake.ParseAnswers("a.json", []byte(`{"answers": [{"match": {"node": "b"}, "turns": [{"error": "rateLimitExceeded"}]}]}`))
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunPaused, end.Status, "%+v", end.Error)
	end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["completed", "completed", "completed"]`, string(end.Result))

	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	var warned []journal.Row
	for _, r := range enginetest.OfType(rows, journal.TypeWarning) {
		if r.Reason == runner.ReasonSameThreadReview {
			warned = append(warned, r)
		}
	}
	require.Len(t, warned, 1)
	assert.Equal(t, "c2", warned[0].Call)
	assert.Equal(t, "a reviewer continues the thread of call c1 (architect): the review reads the conversation of the work it reviews", warned[0].Detail)
}
