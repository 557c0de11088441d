package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// tierPickScript steps one node or the other by a call's result: with the result a usage
// limit held, node n; with the rerun's, node m. Then it calls each node's executor again.
const tierPickScript = `import { agent } from "crw:agent";
import * as schemas from "crw:lib/schemas";
import crw from "crw";
export default async function main() {
  const n = await agent.call({ role: "executor", node: "n", prompt: "build n", schema: schemas.buildReport });
  const m = await agent.call({ role: "executor", node: "m", prompt: "build m", schema: schemas.buildReport });
  const a = await agent.call({ role: "explorer", node: "a", prompt: "A" });
  const step = a.status === "completed" ? crw.tierStep("m", m) : crw.tierStep("n", n);
  const again = await agent.call({ role: "executor", node: "n", prompt: "again n", schema: schemas.buildReport });
  return [n.status, m.status, a.status, step.node + " " + step.role + " " + step.tier, again.status];
}
`

// The first process: n and m end null_model (two answers that are no JSON), a is held by a
// usage limit, and the run pauses; the script steps node n with the held result.
const tierPickFirst = `{"answers": [{"match": {"node": "a"}, "turns": [{"error": "usageLimitExceeded"}]}, {"match": {}, "turns": [{"text": "no"}, {"text": "still no"}]}]}`

// tierPickRerun is the resume's: the limit is gone, a completes; n's call again ends null_model.
const tierPickRerun = `{"answers": [{"match": {}, "turns": [{"text": "no"}, {"text": "still no"}]}, {"match": {"node": "a"}, "turns": [{"text": "ok"}]}]}`

// TestATierStepChosenWithAHeldResultIsMadeAgain: the tier step the paused process made with a
// held result is superseded by the one the rerun's result makes: the resume steps node m, as
// the script now asks, and the journal holds both steps, the second after the rerun.
func TestATierStepChosenWithAHeldResultIsMadeAgain(t *testing.T) {
	t.Parallel()
	ctx, svc, repo := serviceWithRepo(t)
	id, paused, rows := runIn(t, svc, repo, tierPickScript, tierPickFirst, nil)
	require.Equal(t, store.RunPaused, paused.Status, "%+v", paused.Error)
	steps := enginetest.OfType(rows, journal.TypeTierStep)
	require.Len(t, steps, 1)
	require.Equal(t, "n", steps[0].Node)

	end, err := resumeWith(t, svc, id, tierPickRerun)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["null_model", "null_model", "completed", "m executor-t1 1", "null_model"]`, string(end.Result))
	all, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	steps = enginetest.OfType(all, journal.TypeTierStep)
	require.Len(t, steps, 2)
	assert.Equal(t, []string{"n", "m"}, []string{steps[0].Node, steps[1].Node})
	// Node n is as it was before the step the resume made again: its executor call after it
	// runs at the first tier, in the allocation n's first call worked in.
	var againRole string
	var againAlloc, firstAlloc int
	for _, r := range all {
		switch {
		case r.Type == journal.TypePrepared && r.Prompt == "again n" && r.Seq > paused.LastSeq:
			againRole = r.Role
		case r.Type == journal.TypeWorkspacePlaced && r.Node == "n" && firstAlloc == 0:
			firstAlloc = r.Alloc
		case r.Type == journal.TypeWorkspacePlaced && r.Node == "n" && r.Seq > paused.LastSeq:
			againAlloc = r.Alloc
		}
	}
	assert.Equal(t, "executor", againRole)
	assert.Equal(t, firstAlloc, againAlloc)

	// Its shadow, with the run's own script, replays both processes as they went.
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(tierPickScript), 0o644))
	rep, err := svc.Shadow(context.Background(), id, shadow.Options{Script: wf})
	require.NoError(t, err)
	assert.False(t, rep.Differs(), "divergences %+v, unmade %+v, new %+v", rep.Divergences, rep.Unmade, rep.New)
	assert.JSONEq(t, string(end.Result), string(rep.Result))
}

// TestAnEditedTierStepPastAHeldCallIsAccepted: a script edited to step another node where the
// paused process stepped one with a held result is no divergence: its check (the shadow) finds
// the step is one a resume makes again, and the resume makes it.
func TestAnEditedTierStepPastAHeldCallIsAccepted(t *testing.T) {
	t.Parallel()
	ctx, svc, repo := serviceWithRepo(t)
	id, paused, _ := runIn(t, svc, repo, tierPickScript, tierPickFirst, nil)
	require.Equal(t, store.RunPaused, paused.Status, "%+v", paused.Error)
	edited := filepath.Join(t.TempDir(), "edited.js")
	require.NoError(t, os.WriteFile(edited, []byte(strings.Replace(tierPickScript, `a.status === "completed" ?`, `true ?`, 1)), 0o644))

	rep, err := svc.Shadow(ctx, id, shadow.Options{Script: edited})
	require.NoError(t, err)
	assert.Empty(t, rep.Divergences)
	require.NotNil(t, rep.Error)
	assert.Equal(t, "unrecorded", rep.Error.Reason)
	assert.Contains(t, rep.Error.Text(), `crw.tierStep #1 of node "m": the recorded run made its tier step here with a result a pause held, and a resume makes it again`)

	require.NoError(t, svc.ChangeResume(ctx, id, engine.ResumeChange{Script: edited}, "t"))
	end, err := resumeWith(t, svc, id, tierPickRerun)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["null_model", "null_model", "completed", "m executor-t1 1", "null_model"]`, string(end.Result))
}
