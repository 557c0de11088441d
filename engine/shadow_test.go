package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/store"
)

const shadowRecorded = `
import { agent } from "crw:agent";
export default async function main() {
  const out = [];
  for (const step of ["plan", "build", "test", "review"]) {
    out.push((await agent.call({ role: "critic", node: step, prompt: "do " + step })).output);
  }
  return out;
}
`

// A shadow aligns the script's calls with the record: a dropped call is never made, an
// inserted one is new, an edited one diverges, and none of them shifts every later position.
func TestShadowAlignsEditsWithTheRecord(t *testing.T) {
	res, rows := enginetest.Run(t, shadowRecorded, "")
	require.Equal(t, store.RunCompleted, res.Status)

	for _, tc := range []struct {
		name    string
		steps   string
		prompt  string
		matched int
		div     []int    // script positions that diverge
		unmade  []string // recorded call ids
		added   []int    // script positions of new calls
	}{
		{"unchanged", `["plan", "build", "test", "review"]`, `"do " + step`, 4, nil, nil, nil},
		{"a middle call dropped", `["plan", "test", "review"]`, `"do " + step`, 3, nil, []string{"c2"}, nil},
		{"a call inserted", `["plan", "lint", "build", "test", "review"]`, `"do " + step`, 4, nil, nil, []int{2}},
		{"a prompt edited", `["plan", "build", "test", "review"]`, `(step === "test" ? "run " : "do ") + step`, 3, []int{3}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := strings.Replace(strings.Replace(shadowRecorded, `["plan", "build", "test", "review"]`, tc.steps, 1), `"do " + step`, tc.prompt, 1)
			path := filepath.Join(t.TempDir(), "wf.js")
			require.NoError(t, os.WriteFile(path, []byte(script), 0o600))
			rep, err := shadow.Run(context.Background(), shadow.Options{Script: path, Rows: rows})
			require.NoError(t, err)
			assert.Equal(t, tc.matched, rep.Matched)
			var div, added []int
			var unmade []string
			for _, d := range rep.Divergences {
				div = append(div, d.Position)
			}
			for _, c := range rep.Unmade {
				unmade = append(unmade, c.Call)
			}
			for _, c := range rep.New {
				added = append(added, c.Position)
			}
			assert.Equal(t, tc.div, div)
			assert.Equal(t, tc.unmade, unmade)
			assert.Equal(t, tc.added, added)
			assert.Equal(t, store.RunCompleted, rep.Status)
		})
	}
}

// A shadow checks a tier step's evidence as the run checked it, against the record: the same
// refusals and so the same result; an evidence the record has no ended call for is refused too.
func TestShadowChecksTierStepsAsTheRunDid(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	svc, _ := enginetest.LocalService(t)
	_, end, rows := runIn(t, svc, repo, tierStepWorkflow, tierStepAnswers, nil)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)

	shadowOf := func(script string) *shadow.Report {
		path := filepath.Join(t.TempDir(), "wf.js")
		require.NoError(t, os.WriteFile(path, []byte(script), 0o600))
		rep, err := shadow.Run(context.Background(), shadow.Options{Script: path, Rows: rows})
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, rep.Status, "%+v", rep.Error)
		return rep
	}
	rep := shadowOf(tierStepWorkflow)
	assert.False(t, rep.Differs())
	assert.JSONEq(t, string(end.Result), string(rep.Result))

	rep = shadowOf(strings.Replace(tierStepWorkflow, `const step = crw.tierStep("f", build);`,
		`refusals.push(attempt(() => crw.tierStep("f", { callId: "c9" })));
  const step = crw.tierStep("f", build);`, 1))
	var out struct{ Refusals []string }
	require.NoError(t, json.Unmarshal(rep.Result, &out))
	assert.Equal(t, []string{
		"invalid_request: crw.tierStep: the evidence is call c2, a explorer call: a tier step moves a node's executor calls",
		`invalid_request: crw.tierStep: the evidence is call c1, of node "f", not of node "g"`,
		`invalid_request: crw.tierStep: the evidence names call "c9", which is no ended call of the recorded run`,
		`invalid_request: crw.tierStep: node "f" runs at the top tier already (executor-t1)`,
	}, out.Refusals)
}
