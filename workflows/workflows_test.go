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
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/internal/enginetest"
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
	ctx := context.Background()
	res, err := svc.Run(ctx, engine.CreateOptions{Workflow: workflow, Input: input, BackendOpts: opts, Pool: new(4), Repo: repo}, engine.ExecOptions{})
	require.NoError(t, err)
	// A decision the workflow asks is answered with a value its schema allows, and the run
	// resumed, until it ends.
	for i := 0; res.Status == store.RunWaitingDecision; i++ {
		require.Less(t, i, 10, "the run keeps asking")
		rows, err := svc.Rows(ctx, res.Run)
		require.NoError(t, err)
		st, err := svc.Status(ctx, res.Run)
		require.NoError(t, err)
		for _, d := range st.Decisions {
			for _, r := range enginetest.OfType(rows, journal.TypeDecisionRequested) {
				if r.DecisionID == d.ID {
					value, err := schema.Synthesize(r.Schema)
					require.NoError(t, err)
					_, err = svc.Answer(ctx, res.Run, d.ID, value, "the test", false)
					require.NoError(t, err)
				}
			}
		}
		res, err = svc.Execute(ctx, res.Run, engine.ExecOptions{})
		require.NoError(t, err)
	}
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
	require.GreaterOrEqual(t, len(names), 3)
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

// TestBuildCommitStepsUpAndKeepsTheApprovedChange: the executor's null_model steps the node up
// a tier; the stronger executor's change is reviewed in a checkout of the pending work, the
// run waits for the keep decision, and once it is answered the change is committed on the
// node's ref, on the repository's head.
func TestBuildCommitStepsUpAndKeepsTheApprovedChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	repo := enginetest.GitRepo(t, map[string]string{"README.md": "# the project\n"})
	head := enginetest.Git(t, repo, "rev-parse", "HEAD")
	res, err := svc.Run(ctx, engine.CreateOptions{Workflow: "build-commit.js", Repo: repo,
		BackendOpts: map[string]string{"answers": filepath.Join("..", "testdata", "answers", "build-commit.json")}}, engine.ExecOptions{})
	require.NoError(t, err)
	require.Equal(t, store.RunWaitingDecision, res.Status, "%+v", res.Error)
	st, err := svc.Status(ctx, res.Run)
	require.NoError(t, err)
	require.Len(t, st.Decisions, 1)
	assert.Equal(t, "keep", st.Decisions[0].ID)
	assert.Equal(t, "Keep the change? Added --verbose, which prints each step to stderr.", st.Decisions[0].Question)
	assert.Empty(t, enginetest.Git(t, repo, "for-each-ref", "refs/crw/"), "nothing is committed before the decision")

	_, err = svc.Answer(ctx, res.Run, "keep", json.RawMessage(`{"keep": true, "note": null}`), "the test", false)
	require.NoError(t, err)
	res, err = svc.Execute(ctx, res.Run, engine.ExecOptions{})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, res.Status, "%+v", res.Error)
	out := result(t, res)
	assert.Equal(t, "committed", out["outcome"])
	assert.Equal(t, "executor-t1", out["tier"])
	ref := "refs/crw/flow/" + res.Run + "/nodes/change"
	assert.Equal(t, ref, out["ref"])
	commit := enginetest.Git(t, repo, "rev-parse", ref)
	assert.Equal(t, commit, out["commit"])
	assert.Equal(t, head, enginetest.Git(t, repo, "rev-parse", ref+"^"))
	assert.Equal(t, "README.md\nmain.go\nmain_test.go", enginetest.Git(t, repo, "ls-tree", "--name-only", ref))
	assert.Equal(t, "Add a --verbose flag to the command line that prints each step as it runs.", enginetest.Git(t, repo, "log", "-1", "--format=%s", ref))
	assert.Equal(t, head, enginetest.Git(t, repo, "rev-parse", "HEAD"), "the user's checkout is left as it was")
	rows, err := svc.Rows(ctx, res.Run)
	require.NoError(t, err)
	placed := enginetest.OfType(rows, journal.TypeWorkspacePlaced)
	require.Len(t, placed, 3)
	assert.Equal(t, []string{"attempt", "attempt", "checkout"}, []string{placed[0].Placement, placed[1].Placement, placed[2].Placement})
	assert.Equal(t, []int{1, 2}, []int{placed[0].Alloc, placed[1].Alloc})
	assert.Len(t, enginetest.OfType(rows, journal.TypeTierStep), 1)
}
