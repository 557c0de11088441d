package workflows_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local/journalfile/journalfiletest"
	"github.com/crw-dev/crw/workflows"
)

func run(t *testing.T, workflow, answers string, input json.RawMessage) *store.Status {
	t.Helper()
	if answers != "" {
		answers = filepath.Join("..", "testdata", "answers", answers)
	}
	svc, _ := enginetest.LocalService(t)
	opts := map[string]string{}
	if answers != "" {
		opts["answers"] = answers
	}
	// The executors work in worktrees of the run's repository.
	repo := enginetest.GitRepo(t, map[string]string{"README.md": "# the project\n"})
	res, err := svc.Run(context.Background(), engine.CreateOptions{Workflow: workflow, Input: input, BackendOpts: opts, Pool: 4, Repo: repo}, engine.ExecOptions{})
	require.NoError(t, err)
	journalfiletest.Check(t, enginetest.JournalPath(svc, res.Run))
	return res
}

func result(t *testing.T, res *store.Status) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, json.Unmarshal(res.Result, &out), "result %s", res.Result)
	return out
}

// Every shipped workflow runs offline with nothing but its path.
func TestShippedWorkflowsRunWithDefaults(t *testing.T) {
	names, err := fs.Glob(workflows.FS, "*.[jt]s")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(names), 2)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := run(t, name, "", nil)
			require.Equal(t, store.RunCompleted, res.Status, "error: %+v", res.Error)
			assert.Nil(t, res.Error)
			assert.NotEmpty(t, result(t, res))
			assert.Positive(t, res.Calls[journal.StatusCompleted])
		})
	}
}

func TestPlanBuildReviewRepairLoop(t *testing.T) {
	t.Parallel()
	res := run(t, "plan-build-review.js", "plan-build-review.json", json.RawMessage(`{"task":"Add --verbose"}`))
	require.Equal(t, store.RunCompleted, res.Status, "error: %+v", res.Error)
	out := result(t, res)
	assert.Equal(t, "approved", out["outcome"])
	assert.Equal(t, []any{
		map[string]any{"round": 1.0, "verdict": "request_changes", "findings": 1.0},
		map[string]any{"round": 2.0, "verdict": "approve", "findings": 0.0},
	}, out["rounds"])
	assert.Equal(t, 2.0, out["steps"])
	assert.Equal(t, store.Counts{journal.StatusCompleted: 5}, res.Calls)
}

func TestPlanBuildReviewRateLimitPauses(t *testing.T) {
	t.Parallel()
	res := run(t, "plan-build-review.js", "plan-build-review-rate-limit.json", nil)
	require.Equal(t, store.RunPaused, res.Status)
	out := result(t, res)
	assert.Equal(t, "review_failed", out["outcome"])
	assert.Equal(t, "host_infra_rate", out["reason"])
}

func TestTriageKeepsAndDrops(t *testing.T) {
	t.Parallel()
	res := run(t, "triage.ts", "triage.json", json.RawMessage(`{"target":"client.go"}`))
	require.Equal(t, store.RunCompleted, res.Status, "error: %+v", res.Error)
	out := result(t, res)
	ids := func(key string) []string {
		var got []string
		for _, f := range out[key].([]any) {
			got = append(got, f.(map[string]any)["id"].(string))
		}
		return got
	}
	assert.Equal(t, []string{"correctness/f1", "performance/f1"}, ids("kept"))
	assert.Equal(t, []string{"correctness/f2"}, ids("dropped"))
	assert.Equal(t, store.Counts{journal.StatusCompleted: 4}, res.Calls)
}
