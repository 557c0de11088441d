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
	"github.com/crw-dev/crw/internal/enginetest"
)

// promptLimitScript takes another path where its long prompt is refused: a run created with
// --max-prompt 1 makes the small call, one within the defaults the big one.
const promptLimitScript = `import { agent } from "crw:agent";
export default async function main() {
  try { await agent.call({ role: "explorer", node: "big", prompt: "x".repeat(3000) }); return "big"; }
  catch (e) { await agent.call({ role: "explorer", node: "small", prompt: "fallback: " + e.reason }); return "small"; }
}
`

// tracedRun runs script on the fake backend (its calls answered "ok", an executor's writing a
// file), created with flags, and writes its trace: crw runs a command line on the run's state
// folder.
func tracedRun(t *testing.T, script string, flags ...string) (crw func(words ...string) (int, string, string), wf string, run tracedResult, trace string) {
	t.Helper()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	wf = filepath.Join(dir, "wf.js")
	answers := filepath.Join(dir, "answers.json")
	require.NoError(t, os.WriteFile(wf, []byte(script), 0o644))
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [{"match": {}, "turns": [{"text": "ok", "files": {"made.txt": "made"}}]}]}`), 0o644))
	crw = func(words ...string) (int, string, string) {
		var out, errOut strings.Builder
		code := Run(append(words, "--state", state), IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, backend.NewRegistry(fake.Descriptor()))
		return code, out.String(), errOut.String()
	}
	code, out, errOut := crw(append([]string{"flow", "run", wf, "--answers", answers, "--json"}, flags...)...)
	require.Equal(t, 0, code, "%s%s", out, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &run), out)
	trace = filepath.Join(dir, "run.jsonl")
	code, out, errOut = crw("flow", "trace", run.Run, "-o", trace)
	require.Equal(t, 0, code, "%s%s", out, errOut)
	return crw, wf, run, trace
}

// tracedResult is what crw flow run --json said of a run tracedRun made.
type tracedResult struct {
	Run    string          `json:"run"`
	Result json.RawMessage `json:"result"`
}

// TestATracesShadowRunsWithinTheLimitsGiven: a trace records no limits, so its shadow runs
// within the defaults unless it is given the run's (--max-prompt and the rest); a run's shadow
// runs within the run's own, and refuses limits given.
func TestATracesShadowRunsWithinTheLimitsGiven(t *testing.T) {
	t.Parallel()
	crw, wf, run, trace := tracedRun(t, promptLimitScript, "--no-repo", "--max-prompt", "1")
	require.JSONEq(t, `"small"`, string(run.Result), "the long prompt was refused")

	code, out, errOut := crw("flow", "shadow", wf, "--trace", trace)
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

// TestATracesShadowIsToldItsRunHadNoRepository: a trace does not say whether its run had a
// repository; the shadow of a trace of a run without one, given --no-repo, throws at crw.commit
// as the run did, and its script goes on as the run's did. A run's shadow knows, and refuses
// to be told.
func TestATracesShadowIsToldItsRunHadNoRepository(t *testing.T) {
	t.Parallel()
	crw, wf, run, trace := tracedRun(t, `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  await agent.call({ role: "explorer", node: "look", prompt: "look" });
  let how;
  try { await crw.commit("look", "seen"); how = "committed"; } catch (e) { how = e.code; }
  await agent.call({ role: "explorer", node: "after", prompt: "after the commit: " + how });
  return how;
}
`, "--no-repo")
	require.JSONEq(t, `"invalid_request"`, string(run.Result), "the run has no repository to commit in")

	code, out, errOut := crw("flow", "shadow", wf, "--trace", trace)
	assert.Equal(t, 1, code, "untold, the shadow takes the commit for a divergence: %s%s", out, errOut)
	assert.Contains(t, out, "1 of 2 recorded calls matched; 1 divergence(s), 0 never made, 0 new", out)

	code, out, errOut = crw("flow", "shadow", wf, "--trace", trace, "--no-repo")
	assert.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Contains(t, out, "2 of 2 recorded calls matched; 0 divergence(s), 0 never made, 0 new", out)
	assert.Contains(t, out, `result: "invalid_request"`, out)

	code, out, errOut = crw("flow", "shadow", wf, "--run", run.Run)
	assert.Equal(t, 0, code, "a run's shadow knows the run has no repository: %s%s", out, errOut)
	code, out, errOut = crw("flow", "shadow", wf, "--run", run.Run, "--no-repo")
	assert.Equal(t, 2, code, "%s%s", out, errOut)
	assert.Contains(t, errOut, "invalid_request: --no-repo is for the shadow of a trace: a run's shadow knows whether the run has a repository")
	// The combination is bad input before the run is looked for: a prefix that names no run
	// too, and one that names this one.
	for _, ref := range []string{"nosuch", run.Run[len(run.Run)-6:], "last"} {
		code, out, errOut = crw("flow", "shadow", wf, "--run", ref, "--no-repo")
		assert.Equal(t, 2, code, "%s: %s%s", ref, out, errOut)
		assert.Contains(t, errOut, "invalid_request: --no-repo is for the shadow of a trace", ref)
	}
	code, out, errOut = crw("flow", "shadow", wf, "--run", "nosuch")
	assert.Equal(t, 1, code, "a run that is not there: %s%s", out, errOut)
	assert.Contains(t, errOut, "no run nosuch")
}

// TestATraceOfARunThatCommittedIsNotShadowedWithoutARepository: --no-repo says the trace's run
// had no repository, which a run that committed had: refused, the flag named.
func TestATraceOfARunThatCommittedIsNotShadowedWithoutARepository(t *testing.T) {
	t.Parallel()
	repo := enginetest.GitRepo(t, map[string]string{"README.md": "# x\n"})
	crw, wf, run, trace := tracedRun(t, `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  await agent.call({ role: "executor", node: "a", prompt: "make it" });
  return (await crw.commit("a", { message: "made" })).message;
}
`, "--repo", repo)
	require.JSONEq(t, `"made"`, string(run.Result))
	code, out, errOut := crw("flow", "shadow", wf, "--trace", trace)
	assert.Equal(t, 0, code, "%s%s", out, errOut)
	code, out, errOut = crw("flow", "shadow", wf, "--trace", trace, "--no-repo")
	assert.Equal(t, 2, code, "%s%s", out, errOut)
	assert.Contains(t, errOut, "invalid_request: --no-repo is given, but the trace's run committed (its rows hold crw.commit's): it had a repository")
}
