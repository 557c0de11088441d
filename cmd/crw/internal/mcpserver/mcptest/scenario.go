package mcptest

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Repo is the checkout crw's sources are in.
func Repo(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "..")
}

// RateLimited is an answers file whose review turn hits a rate limit, which pauses the run.
func RateLimited(t testing.TB) []byte {
	data, err := os.ReadFile(filepath.Join(Repo(t), "testdata", "answers", "plan-build-review-rate-limit.json"))
	require.NoError(t, err)
	return data
}

// PauseAndResume drives a fake-backend run of workflows/plan-build-review.js in the git
// checkout repo through the tools: start it with answers that pause it at its review (a rate
// limit), find it paused (status), inspect it, resume it with other answers that let it
// through, and read its result. dir takes the answers files. It returns the run's id.
func (c *Client) PauseAndResume(ctx context.Context, dir, repo string) string {
	t := c.t
	t.Helper()
	answers := filepath.Join(dir, "answers.json")
	require.NoError(t, os.WriteFile(answers, RateLimited(t), 0o600))
	wf := filepath.Join(Repo(t), "workflows", "plan-build-review.js")

	started := c.Call(ctx, "start", map[string]any{"request_key": "start-" + filepath.Base(dir), "workflow": wf,
		"input": map[string]any{"task": "Add a --verbose flag"}, "backend": "fake", "answers": answers, "repo": repo})
	require.False(t, started.IsError, started.Text)
	run, _ := started.Get("run.run").(string)
	require.NotEmpty(t, run, started.Text)
	assert.Equal(t, "running", started.Get("run.state"))
	assert.Nil(t, started.Get("error"))

	// Until the journal says how the run stopped: its process has let it go by then.
	paused := c.Until(ctx, "status", map[string]any{"run": run}, func(a Answer) bool {
		require.False(t, a.IsError, a.Text)
		return a.Get("status.status") != ""
	})
	require.Equal(t, "paused", paused.Get("status.state"), paused.Text)
	assert.Equal(t, "paused", paused.Get("status.status"))
	assert.Equal(t, 2.0, paused.Get("status.calls.completed"), "plan and build")
	assert.Equal(t, 1.0, paused.Get("status.calls.held"), "the review, held by the rate limit")
	assert.Equal(t, "review_failed", paused.Get("status.result.outcome"))
	assert.Equal(t, "host_infra_rate", paused.Get("status.result.reason"))

	nx := c.Call(ctx, "next", map[string]any{"run": run})
	assert.Equal(t, "invalid_request", nx.Code(), "a fake run has no steps for an owner: %s", nx.Text)

	in := c.Call(ctx, "inspect", map[string]any{"run": run})
	require.False(t, in.IsError, in.Text)
	assert.Equal(t, "paused", in.Get("inspection.status.state"))
	assert.Equal(t, "fake", in.Get("inspection.backend.name"))
	next, _ := in.Get("inspection.next").([]any)
	require.NotEmpty(t, next, in.Text)
	assert.Contains(t, next[len(next)-1], "crw flow resume "+run)

	// The limit passed: other answers let every call through.
	through := filepath.Join(dir, "through.json")
	require.NoError(t, os.WriteFile(through, []byte(`{"answers": []}`), 0o600))
	resumed := c.Call(ctx, "resume", map[string]any{"request_key": "resume-" + filepath.Base(dir), "run": run, "answers": through})
	require.False(t, resumed.IsError, resumed.Text)
	assert.Equal(t, run, resumed.Get("run.run"))

	ended := c.Until(ctx, "status", map[string]any{"run": run}, func(a Answer) bool {
		require.False(t, a.IsError, a.Text)
		return a.Get("status.state") == "ended" || a.Get("status.state") == "crashed"
	})
	require.Equal(t, "completed", ended.Get("status.status"), ended.Text)
	assert.Equal(t, "approved", ended.Get("status.result.outcome"), ended.Text)
	assert.Equal(t, 3.0, ended.Get("status.calls.completed"))
	assert.Equal(t, 0.0, ended.Get("status.calls.held"))
	return run
}
