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
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

// The tests of this file try features together, each pair one that held alone and broke in
// combination: a pause beside calls whose worktrees are being made, a verdict followed by a
// commit and a tier step, a pause followed by a decision, an applied verdict followed by the
// same call again.

// waitForRow polls a run's durable rows until one satisfies ok (a row, never a time).
func waitForRow(t *testing.T, svc *engine.Service, id string, ok func(journal.Row) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), enginetest.Timeout)
	defer cancel()
	for {
		rows, _ := svc.Rows(ctx, id)
		for _, r := range rows {
			if ok(r) {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s: no such row came", id)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestAPauseHoldsTheCallsWhoseWorktreesAreBeingMade: a rate limit pauses the run while a sibling
// call's checkout is being made (git is held back by a wrapper until the escalation row is
// durable). The sibling ends held engine_paused, not worktree_failed, its worktree is made whole
// and removed, and a resume with other answers runs it again; at the end the repository has no
// worktree of the run, locked or not.
func TestAPauseHoldsTheCallsWhoseWorktreesAreBeingMade(t *testing.T) {
	// Not parallel: git is found through PATH, which the test changes.
	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	bin := t.TempDir()
	gate := filepath.Join(t.TempDir(), "open")
	realGit, err := lookGit()
	require.NoError(t, err)
	wrapper := "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in --work-tree=*/c1-g1) while [ ! -e " + gate + " ]; do sleep 0.01; done;; esac; done\nexec " + realGit + " \"$@\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "git"), []byte(wrapper), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() {
  const rs = await Promise.all(["a", "b"].map((n) => agent.call({ role: "reviewer", node: n, prompt: "review " + n })));
  return rs.map((r) => r.status + "/" + r.reason);
}
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Repo: repo})
	require.NoError(t, err)
	limited, err := fake.ParseAnswers("a.json", []byte(`{"answers": [{"match": {"node": "b"}, "turns": [{"error": "rateLimitExceeded"}]}]}`))
	require.NoError(t, err)
	go func() {
		waitForRow(t, svc, id, func(r journal.Row) bool { return r.Type == journal.TypeEscalation })
		_ = os.WriteFile(gate, nil, 0o644)
	}()
	host := fake.NewHost("")
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(limited, host)})
	require.NoError(t, err)
	require.Equal(t, store.RunPaused, end.Status)
	assert.JSONEq(t, `["held/engine_paused", "held/host_infra_rate"]`, string(end.Result))
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	c1 := enginetest.Terminal(t, rows, "c1")
	assert.Equal(t, "engine_paused", c1.Reason, "%s", c1.Detail)
	assert.Zero(t, host.Sends("fake-c1-t1"), "the call the pause held sent no turn")
	assert.Equal(t, 1, enginetest.Count(rows, "c1", journal.TypeWorkspacePlaced), "its checkout was made whole and recorded")
	assert.Equal(t, []string{repo}, worktrees(t, repo), "the held call's checkout is removed")

	ok, err := fake.ParseAnswers("a.json", []byte(`{"answers": []}`))
	require.NoError(t, err)
	end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(ok, host)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["completed/null", "completed/null"]`, string(end.Result))
	assert.Equal(t, []string{repo}, worktrees(t, repo))
	assert.NotContains(t, git(t, repo, "worktree", "list", "--porcelain"), "locked")
}

// lookGit is the git binary on PATH before a test puts a wrapper first.
func lookGit() (string, error) {
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(dir, "git")
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}

// worktrees lists a repository's worktrees as git has them registered.
func worktrees(t *testing.T, repo string) []string {
	var out []string
	for _, line := range strings.Split(git(t, repo, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			out = append(out, p)
		}
	}
	return out
}

// verdictThenCommit loses its executor call, waits for the verdict, builds again and commits;
// a null_model of the second build steps the node up a tier.
const verdictThenCommit = `import { agent } from "crw:agent";
import * as schemas from "crw:lib/schemas";
import crw from "crw";
export default async function main() {
  const a = await agent.call({ role: "executor", node: "n", prompt: "build" });
  if (a.status !== "unknown") return ["no loss", a.status];
  const v = await crw.effect(a);
  const b = await agent.call({ role: "executor", node: "n", prompt: "build anew", schema: schemas.buildReport });
  let step = null;
  if (b.status === "null_model") step = crw.tierStep("n", b).role;
  const c = await agent.call({ role: "executor", node: "n", prompt: "finish" });
  const kept = await crw.commit("n", { message: "the change" });
  return [v.verdict, b.status, step, c.status, kept.node];
}
`

// TestAVerdictReleasesTheNodeForCommitsAndTierSteps: after an operator's verdict on a lost
// executor call, a resumed run's crw.tierStep and crw.commit on the node go through (seed 000:
// the verdict releases the hold for every later call, commit and tier step), and the run
// replays as it ran.
func TestAVerdictReleasesTheNodeForCommitsAndTierSteps(t *testing.T) {
	t.Parallel()
	for _, verdict := range []string{decisions.VerdictNotApplied, decisions.VerdictApplied} {
		t.Run(verdict, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			svc, id, wfPath, repo := createdInRepo(t, verdictThenCommit)
			a, err := fake.ParseAnswers("a.json", []byte(`{"answers": [
  {"match": {"call": 1}, "turns": [{"lost": true}]},
  {"match": {"call": 2}, "turns": [{"text": "no"}, {"text": "still no"}]},
  {"match": {"call": 3}, "turns": [{"text": "done", "files": {"out.txt": "x\n"}}]}
]}`))
			require.NoError(t, err)
			end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
			require.NoError(t, err)
			require.Equal(t, store.RunWaitingDecision, end.Status, "%+v", end.Error)
			v := decisions.Verdict{Verdict: verdict}
			if verdict == decisions.VerdictApplied {
				v.Output = json.RawMessage(`"built"`)
			}
			_, err = svc.Recover(ctx, id, "c1", v, "t", false)
			require.NoError(t, err)
			end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
			require.NoError(t, err)
			require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
			assert.JSONEq(t, `["`+verdict+`", "null_model", "executor-t1", "completed", "n"]`, string(end.Result))
			assert.NotEmpty(t, git(t, repo, "rev-parse", "refs/crw/flow/"+id+"/nodes/n"))
			rep, err := svc.Shadow(ctx, id, shadow.Options{Script: wfPath})
			require.NoError(t, err)
			assert.False(t, rep.Differs(), "%+v", rep)
		})
	}
}

// pausedThenDecide asks its owner a question built from a result a pause held.
const pausedThenDecide = `import { agent } from "crw:agent";
import crw from "crw";
const keep = { type: "object", properties: { keep: { type: "boolean" } }, required: ["keep"], additionalProperties: false };
export default async function main() {
  const [a, r] = await Promise.all([
    agent.call({ role: "reviewer", node: "a", prompt: "A" }),
    agent.call({ role: "reviewer", node: "b", prompt: "B" }),
  ]);
  const d = await crw.decide({ id: "keep", question: "triage " + r.status + "; keep?", schema: keep });
  return [a.status, r.status, d.keep];
}
`

// TestAPauseIsNotHiddenByADecision: a run whose calls a rate limit held and which then asks a
// decision ends its process paused, listing the decision; a resume with other answers runs the
// held calls again and asks the decision again with the question as it reads now (a decision is
// its id and schema); the answer resumes it to its end, and it replays as it ran. Answering
// while paused works too.
func TestAPauseIsNotHiddenByADecision(t *testing.T) {
	t.Parallel()
	for _, answerFirst := range []bool{false, true} {
		name := map[bool]string{false: "resume then answer", true: "answer while paused"}[answerFirst]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			svc, _ := enginetest.LocalService(t)
			wf := filepath.Join(t.TempDir(), "wf.js")
			require.NoError(t, os.WriteFile(wf, []byte(pausedThenDecide), 0o644))
			id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
			require.NoError(t, err)
			limited, err := fake.ParseAnswers("a.json", []byte(`{"answers": [
  {"match": {"node": "a"}, "turns": [{"error": "rateLimitExceeded"}]},
  {"match": {"node": "b"}, "turns": [{"text": "ok"}]}
]}`))
			require.NoError(t, err)
			// b's answer is held: only the pause ends its turn.
			end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: enginetest.GateAnswers(fake.New(limited, nil), enginetest.Nodes("b"))})
			require.NoError(t, err)
			require.Equal(t, store.RunPaused, end.Status, "calls are held for the pause: the run is paused")
			st, err := svc.Status(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, store.StatePaused, st.State)
			require.Len(t, st.Decisions, 1, "the decision it waits for besides is listed")
			assert.Equal(t, "triage held; keep?", st.Decisions[0].Question)

			ok, err := fake.ParseAnswers("a.json", []byte(`{"answers": []}`))
			require.NoError(t, err)
			if answerFirst {
				_, err = svc.Answer(ctx, id, "keep", json.RawMessage(`{"keep": true}`), "t", false)
				require.NoError(t, err)
			} else {
				end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(ok, nil)})
				require.NoError(t, err)
				require.Equal(t, store.RunWaitingDecision, end.Status, "%+v", end.Error)
				st, err = svc.Status(ctx, id)
				require.NoError(t, err)
				require.Len(t, st.Decisions, 1)
				assert.Equal(t, "triage completed; keep?", st.Decisions[0].Question, "the question as it reads now")
				_, err = svc.Answer(ctx, id, "keep", json.RawMessage(`{"keep": true}`), "t", false)
				require.NoError(t, err)
			}
			end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(ok, nil)})
			require.NoError(t, err)
			require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
			assert.JSONEq(t, `["completed", "completed", true]`, string(end.Result))
			rows, err := svc.Rows(ctx, id)
			require.NoError(t, err)
			if answerFirst {
				warned := enginetest.OfType(rows, journal.TypeWarning)
				require.Len(t, warned, 1, "the answer was given to another question: said so")
				assert.Equal(t, decisions.ReasonQuestionChanged, warned[0].Reason)
			}
			rep, err := svc.Shadow(ctx, id, shadow.Options{Script: wf})
			require.NoError(t, err)
			assert.False(t, rep.Differs(), "%+v", rep)
		})
	}
}

// appliedThenAgain asks for the same effect again once the verdict on a lost call came.
const appliedThenAgain = `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const a = await agent.call({ role: "executor", node: "n", prompt: "build" });
  const v = await crw.effect(a);
  const b = await agent.call({ role: "executor", node: "n", prompt: "build" });
  const c = await agent.call({ role: "executor", node: "n", prompt: "build more" });
  return [v.verdict, v.output, b.status, b.reason, c.status];
}
`

// TestOnlyANotAppliedVerdictPermitsTheSameCallAgain: seed 002, "only a proven not_applied
// result permits an equivalent mutation to be retried". After applied, the same role, node,
// prompt and schema ends held recovery_hold without a turn (the host never receives it), and the
// workflow has the applied output from crw.effect; another prompt runs. After not_applied, the
// same call is sent.
func TestOnlyANotAppliedVerdictPermitsTheSameCallAgain(t *testing.T) {
	t.Parallel()
	for verdict, want := range map[string]string{
		decisions.VerdictApplied:    `["applied", "built", "held", "recovery_hold", "completed"]`,
		decisions.VerdictNotApplied: `["not_applied", null, "completed", null, "completed"]`,
	} {
		t.Run(verdict, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			repo := gitRepo(t, map[string]string{"README": "hello\n"})
			local, _ := enginetest.LocalService(t)
			inMemory := mem.New()
			inMemory.Dir = t.TempDir() // where its runs' worktrees go
			for _, svc := range []*engine.Service{local, enginetest.Service(inMemory)} {
				wf := filepath.Join(t.TempDir(), "wf.js")
				require.NoError(t, os.WriteFile(wf, []byte(appliedThenAgain), 0o644))
				id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Repo: repo})
				require.NoError(t, err)
				a, err := fake.ParseAnswers("a.json", []byte(`{"answers": [{"match": {"call": 1}, "turns": [{"lost": true}]}]}`))
				require.NoError(t, err)
				host := fake.NewHost("")
				end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, host)})
				require.NoError(t, err)
				require.Equal(t, store.RunWaitingDecision, end.Status)
				v := decisions.Verdict{Verdict: verdict}
				if verdict == decisions.VerdictApplied {
					v.Output = json.RawMessage(`"built"`)
				}
				_, err = svc.Recover(ctx, id, "c1", v, "t", false)
				require.NoError(t, err)
				end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, host)})
				require.NoError(t, err)
				require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
				assert.JSONEq(t, want, string(end.Result))
				sent := 0
				if verdict == decisions.VerdictNotApplied {
					sent = 1
				}
				assert.Equal(t, sent, host.Sends("fake-c2-t1"), "the same call's turn")
				assert.Equal(t, 1, host.Sends("fake-c3-t1"), "another prompt's turn")

				// The verdict was journaled while no process held the run: the resume read the
				// applied effect back from the journal.
				rep, err := svc.Shadow(ctx, id, shadow.Options{Script: wf})
				require.NoError(t, err)
				assert.False(t, rep.Differs(), "%+v", rep)
			}
		})
	}
}

// TestDeleteRemovesWhatTheRunLeftInItsRepository: a run whose process stopped while its
// executor worked (its worktree registered), with a worktree a killed git left locked and half
// made beside it, is deleted: every worktree under its folder goes, locked ones included, and
// its refs go unless KeepRefs; another run's refs stay.
func TestDeleteRemovesWhatTheRunLeftInItsRepository(t *testing.T) {
	t.Parallel()
	for _, keepRefs := range []bool{false, true} {
		t.Run(map[bool]string{false: "refs deleted", true: "refs kept"}[keepRefs], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			repo := gitRepo(t, map[string]string{"README": "hello\n"})
			svc, state := enginetest.LocalService(t)
			wf := filepath.Join(t.TempDir(), "wf.js")
			require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  await agent.call({ role: "executor", node: "a", prompt: "one" });
  await crw.commit("a", { message: "one" });
  return (await agent.call({ role: "executor", node: "b", prompt: "two" })).status;
}
`), 0o644))
			id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Repo: repo})
			require.NoError(t, err)
			a, err := fake.ParseAnswers("a.json", []byte(`{"answers": [
  {"match": {"node": "a"}, "turns": [{"text": "done", "files": {"a.txt": "a\n"}}]},
  {"match": {"node": "b"}, "turns": [{"text": "done", "delay_ms": 60000}]}
]}`))
			require.NoError(t, err)
			host := fake.NewHost("")
			require.Error(t, stopWhenSent(t, svc, id, fake.New(a, host), host, 2))
			git(t, repo, "update-ref", "refs/crw/flow/other-run/nodes/x", "HEAD")
			half := filepath.Join(state, "flow", id, "worktrees", "c9-g1")
			git(t, repo, "worktree", "add", "--detach", "--no-checkout", "--lock", "--reason", "crw: being made", half, "HEAD")
			require.Len(t, worktrees(t, repo), 4, "the repository, the two executors' worktrees and the half-made one")

			require.NoError(t, svc.Delete(ctx, id, engine.DeleteOptions{KeepRefs: keepRefs}))
			assert.Equal(t, []string{repo}, worktrees(t, repo))
			refs := strings.Fields(git(t, repo, "for-each-ref", "--format=%(refname)", "refs/crw/"))
			want := []string{"refs/crw/flow/other-run/nodes/x"}
			if keepRefs {
				want = []string{"refs/crw/flow/" + id + "/nodes/a", "refs/crw/flow/other-run/nodes/x"}
			}
			assert.Equal(t, want, refs)
			_, err = os.Stat(filepath.Join(state, "flow", id))
			assert.True(t, os.IsNotExist(err), "the run's folder is gone")
		})
	}
}

// TestACancelOfARunNoProcessHoldsRemovesItsWorktrees: a paused run's worktrees are kept for its
// resume; cancelled while no process holds it, the run ends and they go, as at any run's end,
// while its refs stay.
func TestACancelOfARunNoProcessHoldsRemovesItsWorktrees(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  await agent.call({ role: "executor", node: "a", prompt: "one" });
  await crw.commit("a", { message: "one" });
  return (await agent.call({ role: "executor", node: "b", prompt: "two" })).status;
}
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Repo: repo})
	require.NoError(t, err)
	a, err := fake.ParseAnswers("a.json", []byte(`{"answers": [
  {"match": {"node": "a"}, "turns": [{"text": "done", "files": {"a.txt": "a\n"}}]},
  {"match": {"node": "b"}, "turns": [{"error": "rateLimitExceeded"}]}
]}`))
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunPaused, end.Status)
	require.Len(t, worktrees(t, repo), 3, "a paused run keeps its worktrees for its resume")

	st, err := svc.Cancel(ctx, id, 0)
	require.NoError(t, err)
	assert.Equal(t, store.RunCancelled, st.Status)
	assert.Equal(t, []string{repo}, worktrees(t, repo))
	assert.Equal(t, "refs/crw/flow/"+id+"/nodes/a", git(t, repo, "for-each-ref", "--format=%(refname)", "refs/crw/"))
}

// commitsAfterAPause commits two nodes after their executor calls, the second of which a rate
// limit holds.
const commitsAfterAPause = `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const b = await agent.call({ role: "executor", node: "b", prompt: "B" });
  const a = await agent.call({ role: "executor", node: "a", prompt: "A" });
  const out = [b.status, a.status];
  for (const node of ["b", "a"]) {
    try {
      const k = await crw.commit(node, { message: "work of " + node });
      out.push(node + " " + k.tree);
    } catch (e) {
      out.push(node + " " + e.code);
    }
  }
  return out;
}
`

// TestACommitMadeWhileAPauseHeldACallIsMadeAgain: a rate limit holds node a's executor call,
// and the script goes on with the held result: it commits node b (made) and node a (refused:
// the call that would have made its worktree did not run). A resume runs a's call again; the
// commits the first process made after the held row are not given again from the record but
// made again from the worktrees as they are: b's commit, the same tree on the same parent, is
// the one already made (no second commit on b's ref), and a's commits a's work. The result is
// the uninterrupted run's, and a later resume and a shadow replay it.
func TestACommitMadeWhileAPauseHeldACallIsMadeAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(commitsAfterAPause), 0o644))
	answers := func(aTurns string) *fake.Answers {
		a, err := fake.ParseAnswers("a.json", []byte(`{"answers": [
  {"match": {"node": "b"}, "turns": [{"text": "done", "files": {"b.txt": "b\n"}}]},
  {"match": {"node": "a"}, "turns": [`+aTurns+`]}
]}`))
		require.NoError(t, err)
		return a
	}
	ok := `{"text": "done", "files": {"a.txt": "a\n"}}`

	// The uninterrupted run, in a repository of its own with the same files.
	plainRepo := gitRepo(t, map[string]string{"README": "hello\n"})
	plain, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Repo: plainRepo})
	require.NoError(t, err)
	end, err := svc.Execute(ctx, plain, engine.ExecOptions{Backend: fake.New(answers(ok), nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	var want []string
	require.NoError(t, json.Unmarshal(end.Result, &want))
	require.Len(t, want, 4)
	assert.Equal(t, []string{"completed", "completed"}, want[:2])
	assert.Equal(t, "b", git(t, plainRepo, "show", want[2][2:]+":b.txt"))
	assert.Equal(t, "a", git(t, plainRepo, "show", want[3][2:]+":a.txt"))

	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Repo: repo})
	require.NoError(t, err)
	end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(answers(`{"error": "sessionBudgetExceeded"}`), nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunPaused, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["completed", "held", "b `+want[2][2:]+`", "a `+git(t, repo, "rev-parse", "HEAD^{tree}")+`"]`, string(end.Result),
		"the first process committed b's work, and a's worktree as it started")
	bRef := "refs/crw/flow/" + id + "/nodes/b"
	madeB := git(t, repo, "rev-parse", bRef)

	end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(answers(ok), nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, mustJSON(t, want), string(end.Result), "the uninterrupted run's result")
	assert.Equal(t, madeB, git(t, repo, "rev-parse", bRef), "b's commit is the one the first process made")
	assert.Equal(t, "1", git(t, repo, "rev-list", "--count", bRef+"^.."+bRef), "no second commit on b's ref")
	assert.Equal(t, "a", git(t, repo, "show", "refs/crw/flow/"+id+"/nodes/a:a.txt"))

	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	assert.Len(t, enginetest.OfType(rows, journal.TypeCommitIntent), 4, "two intents of the first process, two of the resume")

	// The record as it now reads replays to the same result.
	rep, err := svc.Shadow(ctx, id, shadow.Options{Script: wf})
	require.NoError(t, err)
	assert.False(t, rep.Differs(), "%+v", rep)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

const laterWorkAfterAPause = `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const [a, b] = await Promise.all([
    agent.call({ role: "executor", node: "a", prompt: "A" }),
    agent.call({ role: "executor", node: "b", prompt: "B" }),
  ]);
  const out = [a.status, b.status];
  out.push((await crw.commit("b", { message: "first of b" })).tree);
  out.push((await agent.call({ role: "executor", node: "b", prompt: "B again" })).status);
  out.push((await crw.commit("b", { message: "second of b" })).tree);
  return out;
}
`

// TestACommitOfANodeTheRerunDidNotTouchKeepsItsTree: the host's session budget holds node a's
// call (the run will end paused, but calls after it still run); the process commits node b,
// then a later executor call of b writes another file. The resume runs a's call again, which
// never works in b's worktree: b's first commit is the one recorded, not a commit of b's
// worktree as it is now (which holds the later call's file too).
func TestACommitOfANodeTheRerunDidNotTouchKeepsItsTree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(laterWorkAfterAPause), 0o644))
	answers := func(aTurns string) *fake.Answers {
		a, err := fake.ParseAnswers("a.json", []byte(`{"answers": [
  {"match": {"call": 1}, "turns": [`+aTurns+`]},
  {"match": {"call": 2}, "turns": [{"text": "done", "files": {"b.txt": "b\n"}}]},
  {"match": {"call": 3}, "turns": [{"text": "done", "files": {"later.txt": "later\n"}}]}
]}`))
		require.NoError(t, err)
		return a
	}
	ok := `{"text": "done", "files": {"a.txt": "a\n"}}`
	files := func(repo, tree string) string {
		return strings.Join(strings.Fields(git(t, repo, "ls-tree", "--name-only", tree)), " ")
	}

	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Repo: repo})
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(answers(`{"error": "sessionBudgetExceeded"}`), nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunPaused, end.Status, "%+v", end.Error)
	var paused []string
	require.NoError(t, json.Unmarshal(end.Result, &paused))
	require.Len(t, paused, 5)
	assert.Equal(t, []string{"held", "completed"}, paused[:2])
	assert.Equal(t, "README b.txt", files(repo, paused[2]))
	assert.Equal(t, "README b.txt later.txt", files(repo, paused[4]))

	end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(answers(ok), nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	var got []string
	require.NoError(t, json.Unmarshal(end.Result, &got))
	require.Len(t, got, 5)
	assert.Equal(t, []string{"completed", "completed"}, got[:2])
	assert.Equal(t, "README b.txt", files(repo, got[2]), "b's first commit has not the later call's file")
	assert.Equal(t, "README b.txt later.txt", files(repo, got[4]))
	assert.Equal(t, "3", git(t, repo, "rev-list", "--count", "refs/crw/flow/"+id+"/nodes/b"), "b's ref: the repository's commit, b's first and its second, no more")

	rep, err := svc.Shadow(ctx, id, shadow.Options{Script: wf})
	require.NoError(t, err)
	assert.False(t, rep.Differs(), "%+v", rep)
}

// TestACallQueuedForThePoolMeetsAPauseAfterACrash: with a pool of one, call b waits for the
// slot call a holds; a's turn is rate limited. Whichever commit the process dies after, the
// resume (which finds a's turn on the host) pauses the run and holds b engine_paused before it
// sends anything, as the process that did not die does: b, only prepared before the crash,
// meets the gate like any call that has not started.
func TestACallQueuedForThePoolMeetsAPauseAfterACrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() {
  const rs = await Promise.all(["a", "b"].map((n) => agent.call({ role: "reviewer", node: n, prompt: "review " + n })));
  return rs.map((r) => r.status + "/" + r.reason);
}
`), 0o644))
	limited, err := fake.ParseAnswers("a.json", []byte(`{"answers": [{"match": {"node": "a"}, "turns": [{"error": "rateLimitExceeded"}]}]}`))
	require.NoError(t, err)
	crashes := 0
	for n := uint64(1); n < 50; n++ {
		st := mem.New()
		svc := enginetest.Service(st)
		id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Pool: new(1)})
		require.NoError(t, err)
		st.CrashAfterCommit(id, n)
		host := fake.NewHost("")
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(limited, host)})
		if err == nil {
			require.Equal(t, store.RunPaused, end.Status, "no crash: the run pauses")
			break
		}
		require.ErrorIs(t, err, store.ErrLeaseLost, "commit %d", n)
		crashes++
		end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(limited, host)})
		require.NoError(t, err, "commit %d", n)
		require.Equal(t, store.RunPaused, end.Status, "crash after commit %d", n)
		assert.JSONEq(t, `["held/host_infra_rate", "held/engine_paused"]`, string(end.Result), "crash after commit %d", n)
		assert.Zero(t, host.Sends("fake-c2-t1"), "crash after commit %d: b sent no turn", n)
	}
	assert.GreaterOrEqual(t, crashes, 2, "the process dies before a's turn is sent and after")
}
