package check_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/check"
	"github.com/crw-dev/crw/errs"
)

func findings(rep *check.Report) []string {
	var out []string
	for _, f := range rep.Findings {
		out = append(out, fmt.Sprintf("%s:%d:%d %s %s", filepath.Base(f.File), f.Line, f.Col, f.Source, f.Rule))
	}
	return out
}

// TestTheRehearsalFindsWhatOnlyRunningFinds: a schema built by a function is refused when its
// call runs, a call nobody awaited is named at its site, and the static pass finds a timer in
// a branch the rehearsal never takes; crw.decide and crw.commit let the rehearsal go on.
func TestTheRehearsalFindsWhatOnlyRunningFinds(t *testing.T) {
	t.Parallel()
	rep, err := check.Check(context.Background(), check.Options{Workflow: "testdata/rehearsal.js"})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"rehearsal.js:5:9 run unawaited_call",
		"rehearsal.js:6:25 run call_refused",
		"rehearsal.js:9:20 static nondeterministic",
	}, findings(rep))
	assert.Equal(t, "completed", rep.Status)
	assert.Equal(t, 2, rep.Calls, "the refused call is a call made")
	assert.Empty(t, rep.Stopped)
}

func TestTheShippedWorkflowsHaveNoMistakes(t *testing.T) {
	t.Parallel()
	for _, wf := range []string{"plan-build-review.js", "triage.ts", "build-commit.js"} {
		rep, err := check.Check(context.Background(), check.Options{Workflow: filepath.Join("../../../../workflows", wf)})
		require.NoError(t, err, wf)
		assert.Empty(t, rep.Findings, wf)
		assert.Equal(t, "completed", rep.Status, wf)
	}
}

// TestARehearsalIsBounded: a workflow that calls for ever stops at the call cap, one that
// spins at the deadline; neither is a finding, and the report says why it stopped.
func TestARehearsalIsBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	forever := filepath.Join(dir, "forever.js")
	require.NoError(t, os.WriteFile(forever, []byte(`import { agent } from "crw:agent";
export default async function main() { for (;;) await agent.call({ role: "explorer", prompt: "again" }); }
`), 0o644))
	rep, err := check.Check(context.Background(), check.Options{Workflow: forever, MaxCalls: 25})
	require.NoError(t, err)
	assert.Equal(t, "the rehearsal stopped after 25 calls (--max-calls)", rep.Stopped)
	assert.Equal(t, 25, rep.Calls)
	assert.Empty(t, rep.Findings)

	spin := filepath.Join(dir, "spin.js")
	require.NoError(t, os.WriteFile(spin, []byte(`import { agent } from "crw:agent";
export default async function main() { await agent.call({ role: "explorer", prompt: "once" }); for (;;) {} }
`), 0o644))
	rep, err = check.Check(context.Background(), check.Options{Workflow: spin, Timeout: 300 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, "the rehearsal stopped after 300ms (--timeout)", rep.Stopped)
	assert.Empty(t, rep.Findings)
}

func TestAWorkflowThatDoesNotLoadIsBadInput(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.js")
	require.NoError(t, os.WriteFile(bad, []byte("export default async function main() { return 1 +; }"), 0o644))
	_, err := check.Check(context.Background(), check.Options{Workflow: bad})
	assert.Equal(t, errs.InvalidRequest, errs.CodeOf(err))
	assert.ErrorContains(t, err, "bad.js:1:50")
}
