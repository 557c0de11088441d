package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// heldPickScript asks a decision whose schema is built from a call's result: the call a usage
// limit holds, the decision offers "held"; run again once the limit has passed, "completed".
const heldPickScript = `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const b = await agent.call({ role: "explorer", node: "b", prompt: "B" });
  const a = await agent.call({ role: "explorer", node: "a", prompt: "A" });
  const go = await crw.decide({ id: "go", question: "Pick", schema: { type: "object",
    properties: { pick: { type: "string", enum: [a.status] } }, required: ["pick"], additionalProperties: false } });
  return [b.status, a.status, go.pick];
}
`

const (
	limitOnA  = `{"answers": [{"match": {"node": "a"}, "turns": [{"error": "usageLimitExceeded"}]}, {"match": {}, "turns": [{"text": "ok"}]}]}`
	limitGone = `{"answers": [{"match": {}, "turns": [{"text": "ok"}]}]}`
)

// pausedWithAnAnswer is a run of heldPickScript paused by the usage limit on its call of node a,
// its decision answered as the held result offered it.
func pausedWithAnAnswer(t *testing.T) (*engine.Service, string) {
	t.Helper()
	svc, _ := enginetest.LocalService(t)
	id, paused, _ := runIn(t, svc, "", heldPickScript, limitOnA, nil)
	require.Equal(t, store.RunPaused, paused.Status, "%+v", paused.Error)
	_, err := svc.Answer(context.Background(), id, "go", json.RawMessage(`{"pick": "held"}`), "uid 1", false)
	require.NoError(t, err)
	return svc, id
}

// TestADecisionBuiltFromAHeldResultIsAskedAnew: the process a pause held a call in asked a
// decision with the held result in hand, and it was answered. A resume that runs the call again
// asks it with another schema: not a divergence, for good, but the decision asked anew, waiting
// for an answer of its own (the recorded one is refused by the new schema). Answered, the run
// ends as its script says, and its shadow agrees. So too when a resume in between was paused
// again before it reached the decision.
func TestADecisionBuiltFromAHeldResultIsAskedAnew(t *testing.T) {
	t.Parallel()
	for _, pausedAgain := range []bool{false, true} {
		ctx := context.Background()
		svc, id := pausedWithAnAnswer(t)
		resume := func(answers string) *store.Status {
			a, err := fake.ParseAnswers("answers.json", []byte(answers))
			require.NoError(t, err)
			end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, fake.NewHost(""))})
			require.NoError(t, err)
			return end
		}
		if pausedAgain {
			again := resume(limitOnA)
			require.Equal(t, store.RunPaused, again.Status, "%+v", again.Error)
		}

		end := resume(limitGone)
		require.Equal(t, store.RunWaitingDecision, end.Status, "paused again %v: %+v", pausedAgain, end.Error)
		st, err := svc.Status(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, []journal.PendingDecision{{ID: "go", Question: "Pick"}}, st.Decisions)
		_, err = svc.Answer(ctx, id, "go", json.RawMessage(`{"pick": "held"}`), "uid 1", false)
		require.Error(t, err, "the answer to the question the record left fits the new schema")
		assert.Contains(t, err.Error(), `must be one of "completed"`)
		_, err = svc.Answer(ctx, id, "go", json.RawMessage(`{"pick": "completed"}`), "uid 1", false)
		require.NoError(t, err)
		_, err = svc.Answer(ctx, id, "go", json.RawMessage(`{"pick": "completed"}`), "uid 1", false)
		assert.ErrorContains(t, err, "was answered already")

		end = resume(limitGone)
		require.Equal(t, store.RunCompleted, end.Status, "paused again %v: %+v", pausedAgain, end.Error)
		assert.JSONEq(t, `["completed", "completed", "completed"]`, string(end.Result))

		rows, err := svc.Rows(ctx, id)
		require.NoError(t, err)
		asked := enginetest.OfType(rows, journal.TypeDecisionRequested)
		require.Len(t, asked, 2, "asked by the process that held the call, and anew by the one that ran it again")
		assert.Contains(t, string(asked[1].Schema), `"completed"`)
		wf := filepath.Join(t.TempDir(), "wf.js")
		require.NoError(t, os.WriteFile(wf, []byte(heldPickScript), 0o644))
		rep, err := svc.Shadow(ctx, id, shadow.Options{Script: wf})
		require.NoError(t, err)
		assert.Empty(t, rep.Divergences)
		assert.Nil(t, rep.Stop)
		assert.JSONEq(t, `["completed", "completed", "completed"]`, string(rep.Result))
	}
}

// TestADecisionAskedWithAnotherSchemaElsewhereDiverges: where no pause's rerun left the record,
// a decision asked with another schema than the journal's stops the resume (a divergence).
func TestADecisionAskedWithAnotherSchemaElsewhereDiverges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, id := newDecideRun(t)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunWaitingDecision, end.Status)
	_, err = svc.Answer(ctx, id, "keep-it", json.RawMessage(`{"keep": true}`), "uid 1", false)
	require.NoError(t, err)
	edited := filepath.Join(t.TempDir(), "edited.js")
	require.NoError(t, os.WriteFile(edited, []byte(strings.Replace(decideWorkflow, `keep: { type: "boolean" }`, `keep: { type: "boolean", description: "keep it?" }`, 1)), 0o644))
	require.NoError(t, svc.ChangeResumeUnchecked(ctx, id, edited, "t"))
	_, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, nil)})
	require.Error(t, err)
	assert.Equal(t, errs.RevisionConflict, errs.CodeOf(err), "%v", err)
	assert.Contains(t, err.Error(), `crw.decide "keep-it": the script asks with another schema than the journal recorded`)
}

// TestAnEditedDecisionPastAHeldCallIsAskedAnew: an edited script whose decision, asked after a
// call a pause held, has another schema than the record's: its shadow does not stop there (a
// resume leaves the record at the held call and asks the decision anew), the resume with it is
// accepted, and it asks the decision as the edited script has it.
func TestAnEditedDecisionPastAHeldCallIsAskedAnew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, id := pausedWithAnAnswer(t)
	edited := filepath.Join(t.TempDir(), "edited.js")
	require.NoError(t, os.WriteFile(edited, []byte(strings.Replace(heldPickScript, `pick: { type: "string",`, `pick: { type: "string", description: "what a became",`, 1)), 0o644))
	rep, err := svc.Shadow(ctx, id, shadow.Options{Script: edited})
	require.NoError(t, err)
	assert.Nil(t, rep.Stop, "a resume does not stop at the decision")
	assert.Empty(t, rep.Divergences)
	require.NotNil(t, rep.Error)
	assert.Equal(t, "waiting_decision", rep.Error.Reason)
	assert.Contains(t, rep.Error.Text(), "a resume asks it anew")
	require.NoError(t, svc.ChangeResume(ctx, id, engine.ResumeChange{Script: edited}, "t"))

	a, err := fake.ParseAnswers("answers.json", []byte(limitGone))
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, fake.NewHost(""))})
	require.NoError(t, err)
	require.Equal(t, store.RunWaitingDecision, end.Status, "%+v", end.Error)
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	asked := enginetest.OfType(rows, journal.TypeDecisionRequested)
	require.Len(t, asked, 2)
	assert.Contains(t, string(asked[1].Schema), "what a became")
}

// TestANewDecisionBeforeRecordedCallsIsAccepted: an edited script asks a decision the journal
// has none of before calls the journal has. A resume asks it, waits, and once it is answered
// replays the recorded calls: the resume with the script is accepted, though its shadow cannot
// answer the decision. A call asked otherwise before the decision is still refused.
func TestANewDecisionBeforeRecordedCallsIsAccepted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	script := `import { agent } from "crw:agent";
import crw from "crw";
const yes = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false };
export default async function main() {
  const one = await agent.call({ role: "explorer", node: "f", prompt: "one" });
  const extra = "none";
  const two = await agent.call({ role: "explorer", node: "f", prompt: "two" });
  const go = await crw.decide({ id: "go", question: "Go on?", schema: yes });
  return [one.status, extra, two.status, go.ok];
}
`
	svc, _ := enginetest.LocalService(t)
	id, waiting, _ := runIn(t, svc, "", script, "", nil)
	require.Equal(t, store.RunWaitingDecision, waiting.Status, "%+v", waiting.Error)
	write := func(text string) string {
		path := filepath.Join(t.TempDir(), "edited.js")
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		return path
	}
	askExtra := strings.Replace(script, `const extra = "none";`, `const extra = (await crw.decide({ id: "extra", question: "Sure?", schema: yes })).ok;`, 1)
	err := svc.ChangeResume(ctx, id, engine.ResumeChange{Script: write(strings.Replace(askExtra, `prompt: "one"`, `prompt: "one, better"`, 1))}, "t")
	require.Error(t, err, "a call asked otherwise before the new decision")
	assert.Contains(t, err.Error(), "asks another prompt")
	require.NoError(t, svc.ChangeResume(ctx, id, engine.ResumeChange{Script: write(askExtra)}, "t"))

	var end *store.Status
	for _, d := range []string{"extra", "go"} {
		end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, fake.NewHost(""))})
		require.NoError(t, err)
		require.Equal(t, store.RunWaitingDecision, end.Status, "%s: %+v", d, end.Error)
		_, err = svc.Answer(ctx, id, d, json.RawMessage(`{"ok": true}`), "t", false)
		require.NoError(t, err, d)
	}
	end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, fake.NewHost(""))})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["completed", true, "completed", true]`, string(end.Result))
}

// TestStatusNamesTheWorkflowAResumeGoesOnWith: after a resume with an edited script, status and
// list name that script, not the one the run was created with (its spec, never rewritten).
func TestStatusNamesTheWorkflowAResumeGoesOnWith(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, id := pausedWithAnAnswer(t)
	st, err := svc.Status(ctx, id)
	require.NoError(t, err)
	spec, err := svc.Store.Spec(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, spec.Workflow, st.Workflow)

	edited := filepath.Join(t.TempDir(), "edited.js")
	require.NoError(t, os.WriteFile(edited, []byte(strings.Replace(heldPickScript, `const b =`, `const unused = 1;
  const b =`, 1)), 0o644))
	require.NoError(t, svc.ChangeResume(ctx, id, engine.ResumeChange{Script: edited}, "t"))
	st, err = svc.Status(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, edited, st.Workflow)
	runs, err := svc.List(ctx)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, edited, runs[0].Workflow)
}

// resumeWith runs the run's next process on the fake backend with answers.
func resumeWith(t *testing.T, svc *engine.Service, id, answers string) (*store.Status, error) {
	t.Helper()
	a, err := fake.ParseAnswers("answers.json", []byte(answers))
	require.NoError(t, err)
	return svc.Execute(context.Background(), id, engine.ExecOptions{Backend: fake.New(a, fake.NewHost(""))})
}

// TestADecisionAskedAnewAndAnsweredIsTheRecordsAgain: once the decision asked anew is
// answered, its answer was given to the schema the rerun's result builds: an edited script that
// changes that schema is refused, as anywhere else.
func TestADecisionAskedAnewAndAnsweredIsTheRecordsAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, id := pausedWithAnAnswer(t)
	end, err := resumeWith(t, svc, id, limitGone)
	require.NoError(t, err)
	require.Equal(t, store.RunWaitingDecision, end.Status)
	_, err = svc.Answer(ctx, id, "go", json.RawMessage(`{"pick": "completed"}`), "uid 1", false)
	require.NoError(t, err)
	edited := filepath.Join(t.TempDir(), "edited.js")
	require.NoError(t, os.WriteFile(edited, []byte(strings.Replace(heldPickScript, `pick: { type: "string",`, `pick: { type: "string", description: "x",`, 1)), 0o644))
	err = svc.ChangeResume(ctx, id, engine.ResumeChange{Script: edited}, "t")
	require.Error(t, err)
	assert.Equal(t, errs.RevisionConflict, errs.CodeOf(err), "%v", err)
	assert.Contains(t, err.Error(), `crw.decide "go": the script asks with another schema than the journal recorded`)
}

// TestACallAskedOtherwiseBeforeTheScriptWaitsIsRefused: an edited script that asks a new
// decision without awaiting it and then makes a recorded call otherwise: a resume makes that
// call before it waits for the answer, and stops there. Its check refuses the script.
func TestACallAskedOtherwiseBeforeTheScriptWaitsIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	id, paused, _ := runIn(t, svc, "", `import { agent } from "crw:agent";
export default async function main() {
  const c = await agent.call({ role: "explorer", node: "c", prompt: "C" });
  const a = await agent.call({ role: "explorer", node: "a", prompt: "A" });
  return [c.status, a.status];
}
`, limitOnA, nil)
	require.Equal(t, store.RunPaused, paused.Status, "%+v", paused.Error)
	edited := filepath.Join(t.TempDir(), "edited.js")
	require.NoError(t, os.WriteFile(edited, []byte(`import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const p = crw.decide({ id: "new", question: "Q", schema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false } });
  const c = await agent.call({ role: "explorer", node: "c", prompt: "C, otherwise" });
  const a = await agent.call({ role: "explorer", node: "a", prompt: "A" });
  const d = await p;
  return [c.status, a.status, d.ok];
}
`), 0o644))
	err := svc.ChangeResume(ctx, id, engine.ResumeChange{Script: edited}, "t")
	require.Error(t, err, "a call asked otherwise before the script waits")
	assert.Contains(t, err.Error(), "call c1 (#1, node c) asks another prompt")
}

// slowInterrupt is a backend whose interrupted turns of node s come back only once after is
// true (or after a while), as a real host's may: the held row of s's call is journaled after
// what the script did meanwhile.
type slowInterrupt struct {
	backend.Backend
	after func() bool
}

func (b slowInterrupt) Run(ctx context.Context, t backend.Turn, rec backend.Recorder) backend.Outcome {
	out := b.Backend.Run(ctx, t, rec)
	if t.Call.Node == "s" && out.Status == backend.Interrupted {
		for deadline := time.Now().Add(enginetest.Timeout); !b.after() && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return out
}

// TestADecisionAskedBeforeAnotherHeldRowIsAskedAnew: the pause holds two calls; the script asks
// its decision with the first held result, and the other held row comes after the decision. A
// resume runs that other call again first (it was issued first): the decision was asked with a
// held result in hand all the same, and is asked anew, not taken for a divergence.
func TestADecisionAskedBeforeAnotherHeldRowIsAskedAnew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	script := `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const sp = agent.call({ role: "explorer", node: "s", prompt: "S" });
  const a = await agent.call({ role: "explorer", node: "a", prompt: "A" });
  const go = await crw.decide({ id: "go", question: "Pick", schema: { type: "object",
    properties: { pick: { type: "string", enum: [a.status] } }, required: ["pick"], additionalProperties: false } });
  const s = await sp;
  return [a.status, go.pick, s.status];
}
`
	svc, _ := enginetest.LocalService(t)
	slow := `{"answers": [{"match": {"node": "a"}, "turns": [{"error": "usageLimitExceeded"}]}, {"match": {"node": "s"}, "turns": [{"text": "ok", "delay_ms": 60000}]}, {"match": {}, "turns": [{"text": "ok"}]}]}`
	asked := func() bool { // the run has journaled its decision
		runs, err := svc.List(ctx)
		if err != nil || len(runs) != 1 {
			return false
		}
		rows, err := svc.Rows(ctx, runs[0].Run)
		return err == nil && len(enginetest.OfType(rows, journal.TypeDecisionRequested)) > 0
	}
	id, paused, rows := runWith(t, svc, "", script, slow, func(b backend.Backend) backend.Backend { return slowInterrupt{b, asked} })
	require.Equal(t, store.RunPaused, paused.Status, "%+v", paused.Error)
	var order []string
	for _, r := range rows {
		if r.Type == journal.TypeHeld || r.Type == journal.TypeDecisionRequested {
			order = append(order, r.Type+" "+r.Call+r.DecisionID)
		}
	}
	require.Equal(t, []string{"held c2", "decision_requested go", "held c1"}, order, "the other held row comes after the decision")
	_, err := svc.Answer(ctx, id, "go", json.RawMessage(`{"pick": "held"}`), "uid 1", false)
	require.NoError(t, err)

	end, err := resumeWith(t, svc, id, limitGone)
	require.NoError(t, err, "the run's own script diverged")
	require.Equal(t, store.RunWaitingDecision, end.Status, "%+v", end.Error)
	_, err = svc.Answer(ctx, id, "go", json.RawMessage(`{"pick": "completed"}`), "uid 1", false)
	require.NoError(t, err)
	end, err = resumeWith(t, svc, id, limitGone)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["completed", "completed", "completed"]`, string(end.Result))
}

// completesAfter is a backend whose turns of node b end only once after is true (or after a
// while): the record's completions come in the order a test needs, whatever the machine's load.
type completesAfter struct {
	backend.Backend
	after func() bool
}

func (b completesAfter) Run(ctx context.Context, t backend.Turn, rec backend.Recorder) backend.Outcome {
	if t.Call.Node == "b" {
		for deadline := time.Now().Add(enginetest.Timeout); !b.after() && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return b.Backend.Run(ctx, t, rec)
}

// TestAScriptThatGoesOnAfterAPassedOverCompletionIsCheckedThere: the record completed c2 (a)
// before c1 (b). An edited script makes b, makes c once b's result comes, and waits for a new
// decision before it makes a: a resume passes a's completion over, gives b's, and the script
// makes c where the record has a: a divergence. The shadow gives b's result too before it tells
// the script nobody answers the decision, and so sees that a is never made where the record has
// it: the check refuses the script.
func TestAScriptThatGoesOnAfterAPassedOverCompletionIsCheckedThere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	aEnded := func() bool {
		runs, err := svc.List(ctx)
		if err != nil || len(runs) != 1 {
			return false
		}
		rows, err := svc.Rows(ctx, runs[0].Run)
		return err == nil && len(enginetest.OfType(rows, journal.TypeCompleted)) > 0
	}
	id, waiting, rows := runWith(t, svc, "", `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const pb = agent.call({ role: "explorer", node: "b", prompt: "B" });
  const a = await agent.call({ role: "explorer", node: "a", prompt: "A" });
  const b = await pb;
  const go = await crw.decide({ id: "go", question: "Go?", schema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false } });
  return [a.status, b.status, go.ok];
}
`, limitGone, func(b backend.Backend) backend.Backend { return completesAfter{b, aEnded} })
	require.Equal(t, store.RunWaitingDecision, waiting.Status, "%+v", waiting.Error)
	var ends []string
	for _, r := range enginetest.OfType(rows, journal.TypeCompleted) {
		ends = append(ends, r.Call)
	}
	require.Equal(t, []string{"c2", "c1"}, ends)

	edited := filepath.Join(t.TempDir(), "edited.js")
	require.NoError(t, os.WriteFile(edited, []byte(`import { agent } from "crw:agent";
import crw from "crw";
const yes = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false };
export default async function main() {
  const pb = agent.call({ role: "explorer", node: "b", prompt: "B" });
  const pc = pb.then(() => agent.call({ role: "explorer", node: "c", prompt: "C" }));
  const n = await crw.decide({ id: "new", question: "New?", schema: yes });
  const a = await agent.call({ role: "explorer", node: "a", prompt: "A" });
  const c = await pc;
  const go = await crw.decide({ id: "go", question: "Go?", schema: yes });
  return [a.status, c.status, n.ok, go.ok];
}
`), 0o644))
	err := svc.ChangeResume(ctx, id, engine.ResumeChange{Script: edited}, "t")
	require.Error(t, err, "the resume makes c where the record has a")
	assert.Equal(t, errs.RevisionConflict, errs.CodeOf(err), "%v", err)
	assert.Contains(t, err.Error(), "call c2 (explorer/a)")
}
