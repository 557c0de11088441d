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
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// The shadow of an unchanged script takes the path its run took: the tests below each give a
// run something its host decides (its limits, the place of a decision's answer among the
// results, what crw.decide and a resume: handle refuse), and its shadow must match every
// call and end with the run's result.

// serviceWithRepo is a run service on a state folder of its own, a git repository for its runs
// and a context that ends with the test or at enginetest.Timeout.
func serviceWithRepo(t *testing.T) (context.Context, *engine.Service, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), enginetest.Timeout)
	t.Cleanup(cancel)
	svc, _ := enginetest.LocalService(t)
	return ctx, svc, gitRepo(t, map[string]string{"README": "hello\n"})
}

// shadowOfRun shadows run id with the script at wf and requires it to match the run: no
// difference, and the run's result.
func shadowOfRun(t *testing.T, svc *engine.Service, id, wf string, end *store.Status) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), enginetest.Timeout)
	defer cancel()
	rep, err := svc.Shadow(ctx, id, shadow.Options{Script: wf})
	require.NoError(t, err)
	assert.False(t, rep.Differs(), "divergences %+v, unmade %+v, new %+v", rep.Divergences, rep.Unmade, rep.New)
	require.Equal(t, store.RunCompleted, rep.Status, "%+v", rep.Error)
	assert.JSONEq(t, string(end.Result), string(rep.Result), "the shadow's result is the run's")
}

// TestAShadowReplaysWithinTheRunsLimits: a run whose limits let its script recurse deeper and
// refuse a shorter prompt than the defaults took its path within them; its shadow does too.
func TestAShadowReplaysWithinTheRunsLimits(t *testing.T) {
	t.Parallel()
	svc, _ := enginetest.LocalService(t)
	script := `import { agent } from "crw:agent";
function depth(n) { return n === 0 ? 0 : 1 + depth(n - 1); }
export default async function main() {
  let deep;
  try { deep = depth(15000); } catch (e) { deep = "too deep"; }
  let r;
  try { r = await agent.call({ role: "explorer", node: "big", prompt: "x".repeat(3000) }); }
  catch (e) { r = await agent.call({ role: "explorer", node: "small", prompt: "fallback: " + e.reason }); }
  return [deep, r.callId];
}
`
	prompt, stack := int64(1<<10), 20000
	id, end, _ := runIn(t, svc, "", script, "", func(o *engine.CreateOptions) {
		o.Limits.PromptBytes, o.Limits.StackDepth = &prompt, &stack
	})
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	require.JSONEq(t, `[15000, "c1"]`, string(end.Result), "the run's own path")
	shadowOfRun(t, svc, id, scriptOf(t, svc, id), end)
}

// TestAShadowOfARunWithoutARepositoryCommitsAsItDid: crw.commit in a run without a repository
// throws invalid_request, and a script that catches it goes on; its shadow throws the same,
// where it took the commit for a divergence (the record has none), and so does the shadow that
// checks a resume's edited script. A trace does not say whether its run had a repository: its
// shadow is told.
func TestAShadowOfARunWithoutARepositoryCommitsAsItDid(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), enginetest.Timeout)
	defer cancel()
	svc, _ := enginetest.LocalService(t)
	script := `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const r = await agent.call({ role: "explorer", node: "look", prompt: "look around" });
  let committed;
  try { committed = (await crw.commit("look", "what was seen")).commit; }
  catch (e) { committed = e.code + ": " + e.message; }
  const s = await agent.call({ role: "explorer", node: "again", prompt: "and then: " + committed });
  const go = await crw.decide({ id: "go", question: "Go on?", schema: { type: "object",
    properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false } });
  return [r.callId, s.callId, committed, go.ok];
}
`
	id, waiting, _ := runIn(t, svc, "", script, "", nil)
	require.Equal(t, store.RunWaitingDecision, waiting.Status, "%+v", waiting.Error)

	// The resume's script, edited below the commit, replays the journal as recorded.
	edited := filepath.Join(t.TempDir(), "edited.js")
	require.NoError(t, os.WriteFile(edited, []byte(strings.Replace(script, "return [", `return ["edited", `, 1)), 0o644))
	require.NoError(t, svc.ChangeResume(ctx, id, engine.ResumeChange{Script: edited}, "t"))
	_, err := svc.Answer(ctx, id, "go", json.RawMessage(`{"ok": true}`), "t", false)
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	require.JSONEq(t, `["edited", "c1", "c2", "invalid_request: crw.commit: the run has no repository: start it in a git checkout or with --repo DIR", true]`,
		string(end.Result), "the run's own path")
	shadowOfRun(t, svc, id, edited, end)

	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	trace := func(noRepo bool) *shadow.Report {
		rep, err := svc.Shadow(ctx, "", shadow.Options{Script: edited, Rows: rows, NoRepository: noRepo})
		require.NoError(t, err)
		return rep
	}
	told := trace(true)
	assert.False(t, told.Differs(), "divergences %+v, unmade %+v, new %+v", told.Divergences, told.Unmade, told.New)
	assert.JSONEq(t, string(end.Result), string(told.Result), "the shadow of the trace, told")
	// Untold, the shadow of the trace takes the commit for one the record lacks.
	untold := trace(false)
	require.Len(t, untold.Divergences, 1, "%+v", untold)
	assert.Equal(t, 2, untold.Divergences[0].Position, "%+v", untold.Divergences)
	assert.Contains(t, string(untold.Result), "revision_conflict: crw.commit #1 of node \\\"look\\\": the recorded run has no such commit, and a shadow commits nothing (the shadow of a trace of a run without a repository is given --no-repo)",
		"the error the script caught says what the shadow lacks")
}

// TestAShadowStopsWhereItsResumeWould: a resume whose script commits with another message, steps
// a tier on another call or asks a decision with another schema than its journal recorded at
// that place stops there, whatever the script does with what it is thrown; its shadow stops
// there too, and a resume with that script is refused, nothing written. An effect past the
// record (a commit the journal has none of yet) is no divergence: the resume makes it.
func TestAShadowStopsWhereItsResumeWould(t *testing.T) {
	t.Parallel()
	ctx, svc, repo := serviceWithRepo(t)
	script := `import { agent } from "crw:agent";
import crw from "crw";
const schema = { type: "object", properties: { done: { type: "boolean" } }, required: ["done"], additionalProperties: false };
const attempt = async (f) => { try { return await f(); } catch (e) { return e.reason; } };
export default async function main() {
  const one = await agent.call({ role: "executor", node: "f", prompt: "one", schema });
  const two = await agent.call({ role: "executor", node: "f", prompt: "two", schema });
  const step = await attempt(() => crw.tierStep("f", one).tier);
  const three = await agent.call({ role: "executor", node: "f", prompt: "three", schema });
  const kept = await attempt(async () => (await crw.commit("f", { message: "original message" })).message);
  const more = "none";
  const go = await attempt(() => crw.decide({ id: "go", question: "Go on?", schema: { type: "object",
    properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false } }));
  return [one.status, two.status, step, three.meta.role, kept, more, go.ok];
}
`
	answers := `{"answers": [
  {"match": {"role": "executor"}, "turns": [{"text": "nope", "files": {"a.txt": "a\n"}}, {"text": "still nope"}]},
  {"match": {"role": "executor-t1"}, "turns": [{"json": {"done": true}, "files": {"b.txt": "b\n"}}]}
]}`
	id, waiting, _ := runIn(t, svc, repo, script, answers, nil)
	require.Equal(t, store.RunWaitingDecision, waiting.Status, "%+v", waiting.Error)
	rows := func() int {
		all, err := svc.Rows(ctx, id)
		require.NoError(t, err)
		return len(all)
	}
	before := rows()
	for _, c := range []struct{ name, from, to, stop string }{
		{"message", `message: "original message"`, `message: "changed message"`,
			`crw.commit #1: the script commits node "f" with message "changed message"; the journal's commit #1 is of node "f" with message "original message"`},
		{"evidence", `crw.tierStep("f", one)`, `crw.tierStep("f", two)`,
			`crw.tierStep #1: the script steps node "f" on call c2; the journal's step #1 is of node "f" on call c1`},
		{"schema", `ok: { type: "boolean" }`, `ok: { type: "string" }`, `crw.decide "go"`},
	} {
		edited := filepath.Join(t.TempDir(), c.name+".js")
		require.NoError(t, os.WriteFile(edited, []byte(strings.Replace(script, c.from, c.to, 1)), 0o644))
		rep, err := svc.Shadow(ctx, id, shadow.Options{Script: edited})
		require.NoError(t, err, c.name)
		require.Error(t, rep.Stop, "%s: the shadow went on: %s %s", c.name, rep.Status, rep.Result)
		assert.True(t, rep.Differs(), c.name)
		assert.Contains(t, rep.Stop.Error(), c.stop, c.name)
		require.NotNil(t, rep.Error, c.name)
		assert.Equal(t, []string{string(store.RunFailed), "revision_conflict", "divergence"}, []string{string(rep.Status), rep.Error.Code, rep.Error.Reason}, c.name)
		err = svc.ChangeResume(ctx, id, engine.ResumeChange{Script: edited}, "t")
		e, ok := errs.As(err)
		require.True(t, ok, "%s: the resume's script was taken: %v", c.name, err)
		assert.Equal(t, errs.RevisionConflict, e.Code, "%s: %v", c.name, err)
		assert.Contains(t, e.Error(), c.stop, c.name)
		assert.Equal(t, 1, strings.Count(e.Error(), "revision_conflict"), "%s: %v", c.name, err)
		assert.Equal(t, before, rows(), "%s: nothing is written", c.name)
	}

	// A second commit, past the record's: a resume makes it, so the shadow does not stop.
	more := filepath.Join(t.TempDir(), "more.js")
	require.NoError(t, os.WriteFile(more, []byte(strings.Replace(script, `const more = "none";`,
		`const more = await attempt(async () => (await crw.commit("f", { message: "more" })).message);`, 1)), 0o644))
	rep, err := svc.Shadow(ctx, id, shadow.Options{Script: more})
	require.NoError(t, err)
	assert.NoError(t, rep.Stop)
	require.NoError(t, svc.ChangeResume(ctx, id, engine.ResumeChange{Script: more}, "t"))
	_, err = svc.Answer(ctx, id, "go", json.RawMessage(`{"ok": true}`), "t", false)
	require.NoError(t, err)
	a, err := fake.ParseAnswers("answers.json", []byte(answers))
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, fake.NewHost(""))})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["null_model", "null_model", 1, "executor-t1", "original message", "more", true]`, string(end.Result))
	shadowOfRun(t, svc, id, more, end)
}

// TestAShadowDoesNotStopAtACommitAResumeMakesAgain: a commit the paused process made after a call
// the pause held is made again by the resume that runs that call again, whatever node or
// message the resume's script gives it: an edited script's shadow does not stop there, and a
// resume with it is taken and ends with the edit.
func TestAShadowDoesNotStopAtACommitAResumeMakesAgain(t *testing.T) {
	t.Parallel()
	script := `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const b = await agent.call({ role: "executor", node: "b", prompt: "B" });
  const a = await agent.call({ role: "executor", node: "a", prompt: "A" });
  let c;
  try { c = (await crw.commit("b", { message: "b done" })).message; } catch (e) { c = e.reason; }
  return [b.status, a.status, c];
}
`
	paused := `{"answers": [{"match": {"node": "a"}, "turns": [{"error": "usageLimitExceeded"}]},
  {"match": {"role": "executor"}, "turns": [{"text": "done", "files": {"x.txt": "x"}}]}]}`
	after := `{"answers": [{"match": {"role": "executor"}, "turns": [{"text": "done", "files": {"y.txt": "y"}}]}]}`
	for _, c := range []struct{ name, from, to, want string }{
		{"message", `"b done"`, `"b finished"`, `["completed", "completed", "b finished"]`},
		{"node", `crw.commit("b"`, `crw.commit("a"`, `["completed", "completed", "b done"]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, svc, repo := serviceWithRepo(t)
			id, end, _ := runIn(t, svc, repo, script, paused, nil)
			require.Equal(t, store.RunPaused, end.Status, "%+v", end.Error)
			require.JSONEq(t, `["completed", "held", "b done"]`, string(end.Result), "the paused process committed with the held result")
			edited := filepath.Join(t.TempDir(), "edited.js")
			require.NoError(t, os.WriteFile(edited, []byte(strings.Replace(script, c.from, c.to, 1)), 0o644))
			rep, err := svc.Shadow(ctx, id, shadow.Options{Script: edited})
			require.NoError(t, err)
			require.NoError(t, rep.Stop, "the shadow stopped where a resume goes on")
			require.NoError(t, svc.ChangeResume(ctx, id, engine.ResumeChange{Script: edited}, "t"))
			a, err := fake.ParseAnswers("answers.json", []byte(after))
			require.NoError(t, err)
			end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, fake.NewHost(""))})
			require.NoError(t, err)
			require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
			assert.JSONEq(t, c.want, string(end.Result))
		})
	}
}

// TestATierStepPastTheRecordStepsTheNodeInTheShadowToo: a tier step the record does not have,
// which a resume makes, moves the node's next executor calls a tier up there: one the record
// has of the node then diverges (its role), in the shadow as in the resume, which is refused;
// a second step of the node is refused as the run refuses it.
func TestATierStepPastTheRecordStepsTheNodeInTheShadowToo(t *testing.T) {
	t.Parallel()
	ctx, svc, repo := serviceWithRepo(t)
	script := `import { agent } from "crw:agent";
import crw from "crw";
const schema = { type: "object", properties: { done: { type: "boolean" } }, required: ["done"], additionalProperties: false };
const attempt = async (f) => { try { return await f(); } catch (e) { return e.reason || e.code; } };
export default async function main() {
  const one = await agent.call({ role: "executor", node: "f", prompt: "one", schema });
  const steps = [];
  const two = await agent.call({ role: "executor", node: "f", prompt: "two", schema });
  const go = await crw.decide({ id: "go", question: "Go on?", schema: { type: "object",
    properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false } });
  return [one.status, steps, two.status, go.ok];
}
`
	answers := `{"answers": [{"match": {"role": "executor"}, "turns": [{"text": "nope", "files": {"a.txt": "a\n"}}, {"text": "still nope"}]}]}`
	id, waiting, _ := runIn(t, svc, repo, script, answers, nil)
	require.Equal(t, store.RunWaitingDecision, waiting.Status, "%+v", waiting.Error)
	edited := filepath.Join(t.TempDir(), "edited.js")
	require.NoError(t, os.WriteFile(edited, []byte(strings.Replace(script, "const steps = [];",
		`const steps = [await attempt(() => crw.tierStep("f", one).tier), await attempt(() => crw.tierStep("f", one).tier)];
  console.log(JSON.stringify(steps));`, 1)), 0o644))
	var console strings.Builder
	rep, err := svc.Shadow(ctx, id, shadow.Options{Script: edited, Log: &console})
	require.NoError(t, err)
	// The node's second executor call is the tier up's: not the record's c2, which is never made.
	require.Len(t, rep.New, 1, "%+v", rep)
	assert.Equal(t, []string{"executor-t1", "f", "two"}, []string{rep.New[0].Role, rep.New[0].Node, rep.New[0].Prompt})
	require.Len(t, rep.Unmade, 1, "%+v", rep)
	assert.Equal(t, "c2", rep.Unmade[0].Call)
	// The second step is refused as the run refuses a node's second (its top tier already).
	assert.Contains(t, console.String(), `["unrecorded","invalid_request"]`)
	err = svc.ChangeResume(ctx, id, engine.ResumeChange{Script: edited}, "t")
	e, ok := errs.As(err)
	require.True(t, ok, "the resume's script was taken: %v", err)
	assert.Equal(t, errs.RevisionConflict, e.Code, "%v", err)
}

// TestAResumeMayAskAnewWhatAPauseHeld: a resume runs again the calls a pause held, and from the
// first of them what its script asks is its own: a script that asks them otherwise is taken,
// and the run ends with what it asked.
func TestAResumeMayAskAnewWhatAPauseHeld(t *testing.T) {
	t.Parallel()
	ctx, svc, repo := serviceWithRepo(t)
	script := `import { agent } from "crw:agent";
export default async function main() {
  const b = await agent.call({ role: "executor", node: "b", prompt: "B" });
  const a = await agent.call({ role: "executor", node: "a", prompt: "A" });
  const c = await agent.call({ role: "executor", node: "c", prompt: "C" });
  return [b.status, a.status, c.status, c.output];
}
`
	id, paused, _ := runIn(t, svc, repo, script, `{"answers": [{"match": {"node": "a"}, "turns": [{"error": "usageLimitExceeded"}]},
  {"match": {}, "turns": [{"text": "ok"}]}]}`, nil)
	require.Equal(t, store.RunPaused, paused.Status, "%+v", paused.Error)
	// Before the held call, the record is the script's: a change there is refused.
	before := filepath.Join(t.TempDir(), "before.js")
	require.NoError(t, os.WriteFile(before, []byte(strings.Replace(script, `prompt: "B"`, `prompt: "B, better"`, 1)), 0o644))
	err := svc.ChangeResume(ctx, id, engine.ResumeChange{Script: before}, "t")
	e, ok := errs.As(err)
	require.True(t, ok, "a change before the held call was taken: %v", err)
	assert.Contains(t, e.Error(), "call c1 (#1, node b) asks another prompt")

	edited := filepath.Join(t.TempDir(), "edited.js")
	require.NoError(t, os.WriteFile(edited, []byte(strings.Replace(script, `prompt: "C"`, `prompt: "C, better"`, 1)), 0o644))
	rep, err := svc.Shadow(ctx, id, shadow.Options{Script: edited})
	require.NoError(t, err)
	assert.Equal(t, 2, rep.OffRecord, "the resume leaves the record at the held call c2")
	require.NoError(t, svc.ChangeResume(ctx, id, engine.ResumeChange{Script: edited}, "t"))
	a, err := fake.ParseAnswers("answers.json", []byte(`{"answers": [{"match": {"prompt": "C, better"}, "turns": [{"text": "better"}]},
  {"match": {}, "turns": [{"text": "ok"}]}]}`))
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, fake.NewHost(""))})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["completed", "completed", "completed", "better"]`, string(end.Result))
}

// TestAShadowStopsAtACommitBeforeTheRecordsCallsOfItsNode: a commit the record does not have,
// made before the record's executor calls of its node are made again, would hold what those
// calls wrote (the node's worktree is as the whole record left it): an edited script that
// makes one takes another path, and a resume with it is refused. One of a node the record's
// later calls do not write is past the record, and taken.
func TestAShadowStopsAtACommitBeforeTheRecordsCallsOfItsNode(t *testing.T) {
	t.Parallel()
	ctx, svc, repo := serviceWithRepo(t)
	script := `import { agent } from "crw:agent";
import crw from "crw";
const attempt = async (f) => { try { return await f(); } catch (e) { return e.reason; } };
export default async function main() {
  const one = await agent.call({ role: "executor", node: "f", prompt: "one" });
  const g = await agent.call({ role: "executor", node: "g", prompt: "g" });
  const kept = "none";
  const two = await agent.call({ role: "executor", node: "f", prompt: "two" });
  const go = await crw.decide({ id: "go", question: "Go on?", schema: { type: "object",
    properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false } });
  return [one.status, g.status, kept, two.status, go.ok];
}
`
	answers := `{"answers": [{"match": {"prompt": "one"}, "turns": [{"text": "done", "files": {"one.txt": "1"}}]},
  {"match": {"prompt": "two"}, "turns": [{"text": "done", "files": {"two.txt": "2"}}]},
  {"match": {}, "turns": [{"text": "done", "files": {"g.txt": "g"}}]}]}`
	id, waiting, _ := runIn(t, svc, repo, script, answers, nil)
	require.Equal(t, store.RunWaitingDecision, waiting.Status, "%+v", waiting.Error)
	edit := func(name, commit string) string {
		path := filepath.Join(t.TempDir(), name+".js")
		require.NoError(t, os.WriteFile(path, []byte(strings.Replace(script, `const kept = "none";`,
			`const kept = await attempt(async () => (await crw.commit(`+commit+`)).message);`, 1)), 0o644))
		return path
	}
	f := edit("f", `"f", { message: "after one" }`)
	rep, err := svc.Shadow(ctx, id, shadow.Options{Script: f})
	require.NoError(t, err)
	require.Error(t, rep.Stop, "%s %s", rep.Status, rep.Result)
	assert.Contains(t, rep.Stop.Error(), `crw.commit #1 of node "f": the journal has no commit here, and its call c3 of the node, which writes, comes after it`)
	err = svc.ChangeResume(ctx, id, engine.ResumeChange{Script: f}, "t")
	e, ok := errs.As(err)
	require.True(t, ok, "the resume's script was taken: %v", err)
	assert.Equal(t, errs.RevisionConflict, e.Code)

	// A resume of a run whose script was edited where it lies, which no check sees, stops at
	// that commit: git is not touched.
	other, waiting2, _ := runIn(t, svc, repo, script, answers, nil)
	require.Equal(t, store.RunWaitingDecision, waiting2.Status, "%+v", waiting2.Error)
	edited, err := os.ReadFile(f)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(scriptOf(t, svc, other), edited, 0o644))
	refs := git(t, repo, "for-each-ref")
	_, err = svc.Answer(ctx, other, "go", json.RawMessage(`{"ok": true}`), "t", false)
	require.NoError(t, err)
	_, err = svc.Execute(ctx, other, engine.ExecOptions{Backend: fake.New(nil, fake.NewHost(""))})
	e, ok = errs.As(err)
	require.True(t, ok, "the resume went on: %v", err)
	assert.Equal(t, errs.RevisionConflict, e.Code)
	assert.Contains(t, e.Error(), `crw.commit #1 of node "f": the journal has no commit here, and its call c3 of the node, which writes, comes after it`)
	assert.Equal(t, refs, git(t, repo, "for-each-ref"), "no ref moved")

	g := edit("g", `"g", { message: "after g" }`)
	rep, err = svc.Shadow(ctx, id, shadow.Options{Script: g})
	require.NoError(t, err)
	require.NoError(t, rep.Stop)
	require.NoError(t, svc.ChangeResume(ctx, id, engine.ResumeChange{Script: g}, "t"))
	_, err = svc.Answer(ctx, id, "go", json.RawMessage(`{"ok": true}`), "t", false)
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, fake.NewHost(""))})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["completed", "completed", "after g", "completed", true]`, string(end.Result))
}

// TestAShadowGivesADecisionsAnswerAtItsPlace: an answer given while a call was under way
// reached the script before the call's result; the shadow gives it in that order, not at once
// (which would have it win every race) nor after the call.
func TestAShadowGivesADecisionsAnswerAtItsPlace(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), enginetest.Timeout)
	defer cancel()
	svc, state := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
import crw from "crw";
const schema = { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false };
export default async function main() {
  const slow = agent.call({ role: "explorer", node: "slow", prompt: "take your time" });
  const answer = crw.decide({ id: "n", question: "How many?", schema });
  answer.then(() => console.log("the answer came"));
  const first = await Promise.race([answer.then(() => "decision"), slow.then(() => "call")]);
  await answer; await slow;
  const after = await agent.call({ role: "explorer", node: "after", prompt: "first came the " + first });
  return [first, after.callId];
}
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	// The slow call ends once the script took the answer (and said so in the run's log).
	end, _ := answerWhileACallWaits(t, svc, id, `{"answers": [{"match": {}, "turns": [{"text": "done"}]}]}`, "slow", "n", `{"n": 7}`, func() {
		waitForLogLine(t, state, id, "the answer came")
	})
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	require.JSONEq(t, `["decision", "c2"]`, string(end.Result), "the answer came first in the run")
	shadowOfRun(t, svc, id, wf, end)
}

// TestAShadowRefusesWhatTheRunRefused: crw.decide refuses an id asked before and a schema
// that is not strict, and a resume: handle of a call still under way or of none, in the run;
// the shadow refuses the same, so the script's notes, and the call made of them, are the same.
func TestAShadowRefusesWhatTheRunRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	script := `import { agent } from "crw:agent";
import crw from "crw";
const strict = { type: "object", properties: { go: { type: "boolean" } }, required: ["go"], additionalProperties: false };
const loose = { type: "object", properties: { go: { type: "boolean" } } };
export default async function main() {
  const notes = [];
  const attempt = async (what, fn) => { try { await fn(); notes.push(what + " answered"); } catch (e) { notes.push(what + " " + e.code + "/" + (e.reason || "")); } };
  await crw.decide({ id: "q", question: "Go?", schema: strict });
  await attempt("again", () => crw.decide({ id: "q", question: "Go again?", schema: strict }));
  await attempt("loose", () => crw.decide({ id: "loose", question: "Loose?", schema: loose }));
  await attempt("reserved", () => crw.decide({ id: "effect/c1", question: "Mine?", schema: strict }));
  const first = await agent.call({ role: "explorer", node: "a", prompt: "A" });
  const pending = agent.call({ role: "explorer", node: "b", prompt: "B" });
  for (const [what, call] of [["open", "c2"], ["unknown", "c9"]]) {
    await attempt(what, () => agent.call({ role: "explorer", node: "c", prompt: "go on", resume: first.handle.replace(/:c1$/, ":" + call) }));
  }
  await pending;
  await agent.call({ role: "explorer", node: "notes", prompt: notes.join("; ") });
  return notes;
}
`
	id, end, _ := runIn(t, svc, "", script, "", nil)
	require.Equal(t, store.RunWaitingDecision, end.Status, "%+v", end.Error)
	_, err := svc.Answer(ctx, id, "q", json.RawMessage(`{"go": true}`), "uid 1", false)
	require.NoError(t, err)
	end, err = svc.Execute(ctx, id, engine.ExecOptions{})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	require.JSONEq(t, `["again invalid_request/", "loose invalid_request/schema_not_strict", "reserved invalid_request/",
		"open invalid_request/", "unknown invalid_request/"]`, string(end.Result), "what the run refused")
	shadowOfRun(t, svc, id, scriptOf(t, svc, id), end)
}

// scriptOf is the workflow file run id was created with.
func scriptOf(t *testing.T, svc *engine.Service, id string) string {
	t.Helper()
	spec, err := svc.Store.Spec(context.Background(), id)
	require.NoError(t, err)
	return spec.Workflow
}

// TestAVerdictThatWonARaceWinsItOnResume: an operator's verdict given while a call was under way
// reached the script before the call's result; a resume and a shadow give it in that order: its
// turn on the loop comes, and what it settles, before the results recorded after it (given at
// once, the call's result came first, and the resume stopped on a divergence of the unchanged
// script).
func TestAVerdictThatWonARaceWinsItOnResume(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), enginetest.Timeout)
	defer cancel()
	svc, state := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
import crw from "crw";
const schema = { type: "object", properties: { go: { type: "boolean" } }, required: ["go"], additionalProperties: false };
export default async function main() {
  const slow = agent.call({ role: "explorer", node: "slow", prompt: "keep the process alive" });
  const lost = await agent.call({ role: "explorer", node: "n", prompt: "build" });
  const verdict = crw.effect(lost);
  verdict.then(() => console.log("the verdict came"));
  const first = await Promise.race([verdict.then(() => "verdict"), slow.then(() => "call")]);
  await verdict; await slow;
  const after = await agent.call({ role: "explorer", node: "after", prompt: "first came the " + first });
  await crw.decide({ id: "end", question: "End?", schema });
  return [lost.status, first, after.callId];
}
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	answers, err := fake.ParseAnswers("a.json", []byte(`{"answers": [
  {"match": {"call": 2}, "turns": [{"lost": true}]},
  {"match": {}, "turns": [{"text": "done"}]}
]}`))
	require.NoError(t, err)
	slow := enginetest.Gate(fake.New(answers, nil), func(c backend.Call) bool { return c.Index == 1 })
	done := make(chan *store.Status, 1)
	go func() {
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: slow})
		assert.NoError(t, err)
		done <- end
	}()
	waitForRow(t, svc, id, func(r journal.Row) bool { return r.Type == journal.TypeOutcomeUnknown && r.Call == "c2" })
	_, err = svc.Recover(ctx, id, "c2", decisions.Verdict{Verdict: decisions.VerdictNotApplied}, "op", false)
	require.NoError(t, err)
	// The slow call ends once the script took the verdict (and said so in the run's log).
	waitForLogLine(t, state, id, "the verdict came")
	slow.Open()
	end := <-done
	require.Equal(t, store.RunWaitingDecision, end.Status, "%+v", end.Error)

	_, err = svc.Answer(ctx, id, "end", json.RawMessage(`{"go": true}`), "uid 1", false)
	require.NoError(t, err)
	end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(answers, nil)})
	require.NoError(t, err, "the resume of the unchanged script")
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["unknown", "verdict", "c3"]`, string(end.Result), "the verdict came first, as it did live")
	shadowOfRun(t, svc, id, wf, end)
}

// waitForLogLine waits until the log of run id, in the state folder state, has a line that
// says line.
func waitForLogLine(t *testing.T, state, id, line string) {
	t.Helper()
	path := filepath.Join(state, "flow", id, local.LogFile)
	require.Eventually(t, func() bool {
		data, _ := os.ReadFile(path)
		return strings.Contains(string(data), line)
	}, enginetest.Timeout, 5*time.Millisecond, "run %s's log never said %q", id, line)
}

// recoveryHoldScript commits on node n, loses a call of n, tries to commit again before the
// verdict (recovery_hold), then, once the verdict reached it, commits.
const recoveryHoldScript = `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  await agent.call({ role: "executor", node: "n", prompt: "write a" });
  const kept = await crw.commit("n", { message: "a" });
  const lost = await agent.call({ role: "executor", node: "n", prompt: "write b" });
  let early;
  try { await crw.commit("n", { message: "b" }); early = "committed"; } catch (e) { early = e.code + "/" + e.reason; }
  if (lost.status !== "unknown") return [kept.node, lost.status, early];
  const verdict = await crw.effect(lost);
  const late = await crw.commit("n", { message: "b at last" });
  return [kept.node, lost.status, early, verdict.verdict, late.message];
}
`

// TestAShadowHoldsANodeFromItsLossToItsVerdict: crw.commit on a node answers recovery_hold from
// the place the script was given a call of it that ended unknown until the verdict on it
// reached the script, in the run and in its shadow alike: a commit before the loss was made, the
// one between the loss and the verdict refused, the one after made. (The shadow once answered
// from the record's final holds: a run still waiting for its verdict had its first commit
// refused by its shadow, and a run given its verdict had its refused commit made.)
func TestAShadowHoldsANodeFromItsLossToItsVerdict(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), enginetest.Timeout)
	defer cancel()
	svc, id, wf, _ := createdInRepo(t, recoveryHoldScript)
	answers, err := fake.ParseAnswers("a.json", []byte(`{"answers": [
  {"match": {"call": 1}, "turns": [{"text": "a", "files": {"a.txt": "a\n"}}]},
  {"match": {"call": 2}, "turns": [{"lost": true}]}
]}`))
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(answers, nil)})
	require.NoError(t, err)
	require.NotEqual(t, store.RunCompleted, end.Status, "the run waits for the verdict: %+v", end)

	// Before the verdict: the shadow's first commit is made, as the run's was.
	rep, err := svc.Shadow(ctx, id, shadow.Options{Script: wf})
	require.NoError(t, err)
	assert.False(t, rep.Differs(), "divergences %+v, unmade %+v, new %+v", rep.Divergences, rep.Unmade, rep.New)
	// Its script then waits for the verdict, which nobody gives a shadow.
	require.NotNil(t, rep.Error)
	assert.Equal(t, "waiting_decision", rep.Error.Reason, "%+v", rep.Error)
	assert.Contains(t, rep.Error.Detail, "crw.effect c2: the recorded run has no verdict on it", "%+v", rep.Error)

	_, err = svc.Recover(ctx, id, "c2", decisions.Verdict{Verdict: decisions.VerdictNotApplied}, "op", false)
	require.NoError(t, err)
	end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(answers, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["n", "unknown", "unreconciled_effect/recovery_hold", "not_applied", "b at last"]`, string(end.Result))
	shadowOfRun(t, svc, id, wf, end)
}
