package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/diagnosis"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

const decideWorkflow = `import { agent } from "crw:agent";
import crw from "crw";
const schema = { type: "object", properties: { keep: { type: "boolean" } }, required: ["keep"], additionalProperties: false };
export default async function main() {
  const look = await agent.call({ role: "explorer", node: "look", prompt: "look" });
  const answer = await crw.decide({ id: "keep-it", question: "Keep the change?", schema });
  const after = await agent.call({ role: "explorer", node: "after", prompt: answer.keep ? "keep" : "drop" });
  return { look: look.status, keep: answer.keep, frozen: Object.isFrozen(answer), after: after.output };
}
`

func newDecideRun(t *testing.T) (*engine.Service, string) {
	t.Helper()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(decideWorkflow), 0o644))
	id, err := svc.Create(context.Background(), engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	return svc, id
}

// TestADecisionEndsTheProcessUntilItIsAnswered: a script that waits for nothing but a
// decision lets its process go (waiting_decision, the decision listed); a wrong answer is
// refused and writes nothing; the answer is journaled, and the resumed run goes on with it.
func TestADecisionEndsTheProcessUntilItIsAnswered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, id := newDecideRun(t)
	answers, err := fake.ParseAnswers("a.json", []byte(`{"answers": [{"match": {"node": "after"}, "turns": [{"text": "kept"}]}]}`))
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(answers, nil)})
	require.NoError(t, err)
	assert.Equal(t, store.RunWaitingDecision, end.Status)
	st, err := svc.Status(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, store.StateWaitingDecision, st.State)
	assert.Equal(t, []journal.PendingDecision{{ID: "keep-it", Question: "Keep the change?"}}, st.Decisions)

	for _, bad := range []struct{ id, value, want string }{
		{"keep-it", `{"keep": "yes"}`, "does not satisfy its schema"},
		{"keep-it", `{"keep": true} trailing`, "does not satisfy its schema"},
		{"other", `{"keep": true}`, `asked no decision "other": it waits for keep-it`},
	} {
		_, err := svc.Answer(ctx, id, bad.id, json.RawMessage(bad.value), "uid 1", false)
		require.Error(t, err, bad.value)
		assert.Equal(t, errs.InvalidRequest, errs.CodeOf(err), "%v", err)
		assert.Contains(t, err.Error(), bad.want)
	}
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	assert.Empty(t, enginetest.OfType(rows, journal.TypeDecisionAnswered), "a refused answer writes nothing")

	got, err := svc.Answer(ctx, id, "keep-it", json.RawMessage(`{"keep": true}`), "uid 1", false)
	require.NoError(t, err)
	assert.True(t, got.Journaled)
	_, err = svc.Answer(ctx, id, "keep-it", json.RawMessage(`{"keep": false}`), "uid 1", false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "answered already")

	end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(answers, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `{"look": "completed", "keep": true, "frozen": true, "after": "kept"}`, string(end.Result))
	rows, err = svc.Rows(ctx, id)
	require.NoError(t, err)
	asked := enginetest.OfType(rows, journal.TypeDecisionRequested)
	require.Len(t, asked, 1, "asked once, whatever the processes")
	answered := enginetest.OfType(rows, journal.TypeDecisionAnswered)
	require.Len(t, answered, 1)
	assert.Equal(t, "uid 1", answered[0].By)
	assert.JSONEq(t, `{"keep":true}`, string(answered[0].Output))
	enginetest.CheckJournal(t, rows)
	st, err = svc.Status(ctx, id)
	require.NoError(t, err)
	assert.Empty(t, st.Decisions)
}

// TestALiveRunTakesItsAnswer: while the run's process lives (a call in flight), the answer
// is left for it: the process journals it and the script goes on, in one process.
func TestALiveRunTakesItsAnswer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), enginetest.Timeout)
	defer cancel()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
import crw from "crw";
const schema = { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false };
export default async function main() {
  const slow = agent.call({ role: "explorer", node: "slow", prompt: "take your time" });
  const answer = await crw.decide({ id: "n", question: "How many?", schema });
  return [answer.n, (await slow).output];
}
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	end, got := answerWhileACallWaits(t, svc, id, `{"answers": [{"match": {"node": "slow"}, "turns": [{"text": "done"}]}]}`, "slow", "n", `{"n": 7}`, nil)
	assert.True(t, got.Journaled, "the live process journaled it, and the command saw it")
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `[7, "done"]`, string(end.Result))
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	assert.Len(t, enginetest.OfType(rows, journal.TypeDecisionAnswered), 1)
	assert.Equal(t, 1, enginetest.Count(rows, "", journal.TypeStarted), "one process did it all")
}

// answerWhileACallWaits executes run id on the fake backend with answers, its calls of node
// slow held until decision is answered with value while the process lives (the answer is
// given once the run asks it) and then, when not nil, until taken returns; it returns the
// run's end and what the answer command said.
func answerWhileACallWaits(t *testing.T, svc *engine.Service, id, answers, slowNode, decision, value string, taken func()) (*store.Status, *engine.Answered) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), enginetest.Timeout)
	defer cancel()
	a, err := fake.ParseAnswers("a.json", []byte(answers))
	require.NoError(t, err)
	// The slow call keeps the process alive: its answer is held until the decision's was given.
	slow := enginetest.GateAnswers(fake.New(a, nil), enginetest.Nodes(slowNode))
	done := make(chan *store.Status, 1)
	go func() {
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: slow})
		assert.NoError(t, err)
		done <- end
	}()
	require.Eventually(t, func() bool {
		st, err := svc.Status(ctx, id)
		return err == nil && len(st.Decisions) == 1
	}, enginetest.Timeout, 10*time.Millisecond)
	got, err := svc.Answer(ctx, id, decision, json.RawMessage(value), "uid 1", true)
	require.NoError(t, err)
	if taken != nil {
		taken()
	}
	slow.Open()
	return <-done, got
}

// TestALiveRunThatRefusesAnAnswerSaysSo: an answer to a decision the journal asked but the
// live process does not wait for (its script, changed, now asks another) is refused by the
// process, and the command says so in the process's words, at once, rather than wait and
// report it left; the decision the process waits for is taken.
func TestALiveRunThatRefusesAnAnswerSaysSo(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), enginetest.Timeout)
	defer cancel()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	const head = `import { agent } from "crw:agent";
import crw from "crw";
const schema = { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false };
`
	require.NoError(t, os.WriteFile(wf, []byte(head+`export default async function main() {
  return (await crw.decide({ id: "n", question: "How many?", schema })).n;
}
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	first, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunWaitingDecision, first.Status)

	// The script changed: it now asks m, with a call in flight that keeps its process alive.
	require.NoError(t, os.WriteFile(wf, []byte(head+`export default async function main() {
  const slow = agent.call({ role: "explorer", node: "slow", prompt: "take your time" });
  const m = await crw.decide({ id: "m", question: "How many more?", schema });
  return [m.n, (await slow).output];
}
`), 0o644))
	answers, err := fake.ParseAnswers("a.json", []byte(`{"answers": [{"match": {"node": "slow"}, "turns": [{"text": "done"}]}]}`))
	require.NoError(t, err)
	// The slow call's answer is held until the decision the process waits for was answered.
	slow := enginetest.GateAnswers(fake.New(answers, nil), enginetest.Nodes("slow"))
	done := make(chan *store.Status, 1)
	go func() {
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: slow})
		assert.NoError(t, err)
		done <- end
	}()
	require.Eventually(t, func() bool {
		st, err := svc.Status(ctx, id)
		return err == nil && slices.ContainsFunc(st.Decisions, func(d journal.PendingDecision) bool { return d.ID == "m" })
	}, enginetest.Timeout, 10*time.Millisecond)

	_, err = svc.Answer(ctx, id, "n", json.RawMessage(`{"n": 7}`), "uid 1", true)
	require.Error(t, err, "the process refused it: no success is reported")
	assert.Equal(t, errs.InvalidRequest, errs.CodeOf(err))
	assert.Equal(t, "invalid_request: run "+id+`'s process refused it: the answer to "n": the run waits for no such decision`, err.Error())

	got, err := svc.Answer(ctx, id, "m", json.RawMessage(`{"n": 3}`), "uid 1", true)
	require.NoError(t, err)
	assert.True(t, got.Journaled)
	slow.Open()
	end := <-done
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `[3, "done"]`, string(end.Result))
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	refused := enginetest.OfType(rows, journal.TypeWarning)
	require.Len(t, refused, 1)
	assert.Equal(t, journal.ReasonAnswerRefused, refused[0].Reason)
	assert.Equal(t, "n", refused[0].DecisionID)
	assert.Equal(t, "uid 1", refused[0].By)
	assert.Equal(t, journal.Digest(`{"n":7}`), refused[0].OutputDigest)
}

// TestDecisionIdsOfTierStepsAreReserved: a workflow cannot ask a decision under a tier step's
// id, which would answer (or decline) the step.
func TestDecisionIdsOfTierStepsAreReserved(t *testing.T) {
	t.Parallel()
	res, _ := enginetest.Run(t, `import crw from "crw";
const schema = { type: "object", properties: { approve: { type: "boolean" } }, required: ["approve"], additionalProperties: false };
export default async function main() {
  try { await crw.decide({ id: "tier-step/n/1", question: "q", schema }); return "asked"; } catch (e) { return e.code + ": " + e.message; }
}
`, "")
	require.Equal(t, store.RunCompleted, res.Status)
	assert.JSONEq(t, `"invalid_request: crw.decide: the id \"tier-step/n/1\" is a tier step's (ids under tier-step/ are): wait for a step's decision by the id crw.tierStep returned"`, string(res.Result))
}

// TestAnAnswerThatCannotResumeWritesNothing: a run whose recorded TMPDIR is gone refuses an
// answer that is to resume it (run_env_unusable): nothing is appended, and the same answer is
// taken once the folder is made again.
func TestAnAnswerThatCannotResumeWritesNothing(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "tmp")
	require.NoError(t, os.Mkdir(tmp, 0o700))
	t.Setenv("TMPDIR", tmp)
	ctx := context.Background()
	svc, id := newDecideRun(t)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunWaitingDecision, end.Status)
	require.NoError(t, os.Remove(tmp))
	_, err = svc.Answer(ctx, id, "keep-it", json.RawMessage(`{"keep": true}`), "uid 1", true)
	require.Error(t, err)
	assert.Equal(t, errs.RunEnvUnusable, errs.CodeOf(err), "%v", err)
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	assert.Empty(t, enginetest.OfType(rows, journal.TypeDecisionAnswered))
	require.NoError(t, os.Mkdir(tmp, 0o700))
	got, err := svc.Answer(ctx, id, "keep-it", json.RawMessage(`{"keep": true}`), "uid 1", false)
	require.NoError(t, err)
	assert.True(t, got.Journaled)
}

// TestAnAnsweredRunWaitsForItsResume: once every decision a run's process ended waiting for is
// answered without a resume (--no-resume), the run waits for nothing but a resume: its state
// says so (waiting_resume, no decision listed), and status and inspect say that a resume goes
// on; the resume does, to the next decision or the run's end.
func TestAnAnsweredRunWaitsForItsResume(t *testing.T) {
	t.Parallel()
	const twice = `import crw from "crw";
const schema = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false };
export default async function main() {
  const first = await crw.decide({ id: "first", question: "First?", schema });
  const second = await crw.decide({ id: "second", question: "Second?", schema });
  return [first.ok, second.ok];
}`
	const once = `import crw from "crw";
const schema = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false };
export default async function main() {
  return [(await crw.decide({ id: "first", question: "First?", schema })).ok];
}`
	for name, tc := range map[string]struct {
		script string
		ids    []string
		result string
	}{"twice": {twice, []string{"first", "second"}, `[true, false]`}, "once": {once, []string{"first"}, `[true]`}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			svc, _ := enginetest.LocalService(t)
			wf := filepath.Join(t.TempDir(), "wf.js")
			require.NoError(t, os.WriteFile(wf, []byte(tc.script), 0o644))
			id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
			require.NoError(t, err)
			for i, d := range tc.ids {
				end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, nil)})
				require.NoError(t, err)
				require.Equal(t, store.RunWaitingDecision, end.Status, "%+v", end.Error)
				st, err := svc.Status(ctx, id)
				require.NoError(t, err)
				require.Equal(t, store.StateWaitingDecision, st.State)
				require.Len(t, st.Decisions, 1)
				assert.Equal(t, d, st.Decisions[0].ID)

				_, err = svc.Answer(ctx, id, d, json.RawMessage(fmt.Sprintf(`{"ok": %v}`, i == 0)), "uid 1", false)
				require.NoError(t, err)
				st, err = svc.Status(ctx, id)
				require.NoError(t, err)
				assert.Equal(t, store.StateWaitingResume, st.State, "the answered decision is no longer waited for")
				assert.Equal(t, store.RunWaitingDecision, st.Status, "how its process ended")
				assert.Empty(t, st.Decisions)
				assert.Equal(t, "the decisions it waited for are answered and no process holds it: crw flow resume "+id+" goes on", diagnosis.StateNext(st))
				in, err := svc.Inspect(ctx, id)
				require.NoError(t, err)
				assert.Equal(t, []string{diagnosis.StateNext(st)}, in.Next)
				_, err = svc.Follow(ctx, id, nil)
				assert.Equal(t, errs.RunUnavailable, errs.CodeOf(err), "no process will move it on: %v", err)
				list, err := svc.List(ctx)
				require.NoError(t, err)
				require.Len(t, list, 1)
				assert.Equal(t, store.StateWaitingResume, list[0].State)
			}
			end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, nil)})
			require.NoError(t, err)
			require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
			assert.JSONEq(t, tc.result, string(end.Result))
		})
	}
}

// TestARunWhoseInputAndSchemaHoldHTMLCharactersResumes: the journal keeps JSON as encoding/json
// writes it, "<", ">", "&", U+2028 and U+2029 escaped; the run's input and a decision's schema
// holding them are still the ones the run started with and asked when its process after the
// answer compares them, and the run goes on to its end, its shadow with it.
func TestARunWhoseInputAndSchemaHoldHTMLCharactersResumes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), enginetest.Timeout)
	defer cancel()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import crw from "crw";
export default async function main(input) {
  const go = await crw.decide({ id: "go", question: "q", schema: { type: "object",
    properties: { ok: { type: "string", enum: ["yes > no & <maybe>\u2028"] } }, required: ["ok"], additionalProperties: false } });
  return [input.task, go.ok];
}
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Input: json.RawMessage(`{"task": "a < b & c > d \u2029"}`)})
	require.NoError(t, err)
	waiting, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunWaitingDecision, waiting.Status, "%+v", waiting.Error)
	_, err = svc.Answer(ctx, id, "go", json.RawMessage(`{"ok": "yes > no & <maybe>\u2028"}`), "t", false)
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["a < b & c > d \u2029", "yes > no & <maybe>\u2028"]`, string(end.Result))
	rep, err := svc.Shadow(ctx, id, shadow.Options{Script: wf})
	require.NoError(t, err)
	assert.NoError(t, rep.Stop)
	assert.Equal(t, store.RunCompleted, rep.Status, "%+v", rep.Error)
}
