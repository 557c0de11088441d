package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
)

// promptLimitScript takes another path where its long prompt is refused: a run created with
// --max-prompt 1 makes the small call, one within the defaults the big one.
const promptLimitScript = `import { agent } from "crw:agent";
export default async function main() {
  try { await agent.call({ role: "explorer", node: "big", prompt: "x".repeat(3000) }); return "big"; }
  catch (e) { await agent.call({ role: "explorer", node: "small", prompt: "fallback: " + e.reason }); return "small"; }
}
`

// TestATracesShadowRunsWithinTheLimitsGiven: a trace records no limits, so its shadow runs
// within the defaults unless it is given the run's (--max-prompt and the rest); a run's shadow
// runs within the run's own, and refuses limits given.
func TestATracesShadowRunsWithinTheLimitsGiven(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	wf := filepath.Join(dir, "wf.js")
	answers := filepath.Join(dir, "answers.json")
	require.NoError(t, os.WriteFile(wf, []byte(promptLimitScript), 0o644))
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [{"match": {}, "turns": [{"text": "ok"}]}]}`), 0o644))
	crw := func(words ...string) (int, string, string) {
		var out, errOut strings.Builder
		code := Run(append(words, "--state", state), IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, backend.NewRegistry(fake.Descriptor()))
		return code, out.String(), errOut.String()
	}
	code, out, errOut := crw("flow", "run", wf, "--no-repo", "--answers", answers, "--max-prompt", "1", "--json")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	var run struct {
		Run    string          `json:"run"`
		Result json.RawMessage `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &run), out)
	require.JSONEq(t, `"small"`, string(run.Result), "the long prompt was refused")
	trace := filepath.Join(dir, "run.jsonl")
	code, out, errOut = crw("flow", "trace", run.Run, "-o", trace)
	require.Equal(t, 0, code, "%s%s", out, errOut)

	code, out, errOut = crw("flow", "shadow", wf, "--trace", trace)
	assert.Equal(t, 1, code, "within the defaults the big call is made: %s%s", out, errOut)
	assert.Contains(t, out, "0 of 1 recorded calls matched; 0 divergence(s), 1 never made, 1 new", out)

	code, out, errOut = crw("flow", "shadow", wf, "--trace", trace, "--max-prompt", "1")
	assert.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Contains(t, out, "1 of 1 recorded calls matched; 0 divergence(s), 0 never made, 0 new", out)

	code, out, errOut = crw("flow", "shadow", wf, "--trace", trace, "--max-prompt", "0")
	assert.Equal(t, 2, code, "%s%s", out, errOut)
	assert.Contains(t, errOut, "--max-prompt", "the flag is named")

	code, out, errOut = crw("flow", "shadow", wf, "--run", run.Run)
	assert.Equal(t, 0, code, "a run's shadow runs within the run's limits: %s%s", out, errOut)
	code, out, errOut = crw("flow", "shadow", wf, "--run", run.Run, "--max-stack-depth", "50")
	assert.Equal(t, 2, code, "%s%s", out, errOut)
	assert.Contains(t, errOut, "invalid_request: limits are given to the shadow of a trace: a run's shadow runs within the limits the run recorded")
}
