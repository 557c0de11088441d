package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/engine/workspace"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

var (
	gitRepo = enginetest.GitRepo
	git     = enginetest.Git
)

// createdInRepo writes script to a workflow file and creates a run of it in a new repository
// holding a README, on a service of its own: the service, the run, the workflow's path and
// the repository.
func createdInRepo(t *testing.T, script string) (svc *engine.Service, id, wf, repo string) {
	t.Helper()
	repo = gitRepo(t, map[string]string{"README": "hello\n"})
	svc, _ = enginetest.LocalService(t)
	wf = filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(script), 0o644))
	id, err := svc.Create(context.Background(), engine.CreateOptions{Workflow: wf, Repo: repo})
	require.NoError(t, err)
	return svc, id, wf, repo
}

// show is a file of a commit of repo.
func show(t testing.TB, repo, commit, path string) string {
	return git(t, repo, "show", commit+":"+path)
}

// runIn creates a run of script on repo and executes it with the fake backend's answers.
func runIn(t testing.TB, svc *engine.Service, repo, script, answers string, configure func(*engine.CreateOptions)) (string, *store.Status, []journal.Row) {
	t.Helper()
	return execIn(t, svc, repo, script, answers, configure, nil)
}

// runWith is runIn on the backend wrap makes of the fake.
func runWith(t testing.TB, svc *engine.Service, repo, script, answers string, wrap func(backend.Backend) backend.Backend) (string, *store.Status, []journal.Row) {
	t.Helper()
	return execIn(t, svc, repo, script, answers, nil, wrap)
}

func execIn(t testing.TB, svc *engine.Service, repo, script, answers string, configure func(*engine.CreateOptions), wrap func(backend.Backend) backend.Backend) (string, *store.Status, []journal.Row) {
	t.Helper()
	ctx := context.Background()
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(script), 0o644))
	opts := engine.CreateOptions{Workflow: wf, Repo: repo}
	if configure != nil {
		configure(&opts)
	}
	id, err := svc.Create(ctx, opts)
	require.NoError(t, err)
	var a *fake.Answers
	if answers != "" {
		a, err = fake.ParseAnswers("answers.json", []byte(answers))
		require.NoError(t, err)
	}
	var b backend.Backend = fake.New(a, fake.NewHost(""))
	if wrap != nil {
		b = wrap(b)
	}
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: b})
	require.NoError(t, err)
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	return id, end, rows
}

const buildReviewCommit = `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const build = await agent.call({ role: "executor", node: "feature", prompt: "write the feature" });
  const review = await agent.call({ role: "reviewer", node: "feature", prompt: "review it" });
  const kept = await crw.commit("feature", { message: "the feature" });
  const fix = await agent.call({ role: "executor", node: "feature", prompt: "polish it" });
  const again = await crw.commit("feature", { message: "polish" });
  return { build: build.status, review: review.status, kept, again, frozen: Object.isFrozen(kept) };
}
`

const buildReviewAnswers = `{"answers": [
  {"match": {"call": 1}, "turns": [{"text": "built", "files": {"src/feature.txt": "v1\n", "README": null}}]},
  {"match": {"call": 3}, "turns": [{"text": "polished", "files": {"src/feature.txt": "v2\n"}}]}
]}`

// TestAnExecutorBuildsInItsWorktreeAndCommitKeepsIt: the executor's files land in its node's
// worktree, not in the repository's checkout; crw.commit puts the worktree's tree on the node's
// ref, on the run's head, and the next commit builds on it. The worktrees are gone at the end.
func TestAnExecutorBuildsInItsWorktreeAndCommitKeepsIt(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"README": "hello\n", "src/main.txt": "main\n"})
	head := git(t, repo, "rev-parse", "HEAD")
	svc, _ := enginetest.LocalService(t)
	id, end, rows := runIn(t, svc, repo, buildReviewCommit, buildReviewAnswers, nil)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)

	var out struct {
		Build, Review string
		Kept, Again   struct{ Node, Commit, Tree, Parent, Ref, Message string }
		Frozen        bool
	}
	enginetest.Decode(t, end, &out)
	assert.Equal(t, "completed", out.Build)
	assert.Equal(t, "completed", out.Review)
	assert.True(t, out.Frozen)
	ref := "refs/crw/flow/" + id + "/nodes/feature"
	assert.Equal(t, ref, out.Kept.Ref)
	assert.Equal(t, head, out.Kept.Parent)
	assert.Equal(t, out.Kept.Commit, out.Again.Parent)
	assert.Equal(t, out.Again.Commit, git(t, repo, "rev-parse", ref))
	assert.Equal(t, "v1\n", show(t, repo, out.Kept.Commit, "src/feature.txt")+"\n")
	assert.Equal(t, "v2\n", show(t, repo, out.Again.Commit, "src/feature.txt")+"\n")
	assert.Equal(t, "main", show(t, repo, out.Again.Commit, "src/main.txt"))
	assert.NotContains(t, git(t, repo, "ls-tree", "--name-only", out.Kept.Commit), "README", "the executor deleted it")
	assert.Equal(t, "the feature", git(t, repo, "log", "-1", "--format=%s", out.Kept.Commit))

	// The user's checkout is untouched and git knows no worktree of the run any more.
	assert.Equal(t, head, git(t, repo, "rev-parse", "HEAD"))
	assert.Empty(t, git(t, repo, "status", "--porcelain"))
	assert.Equal(t, 1, strings.Count(git(t, repo, "worktree", "list", "--porcelain"), "worktree "))

	// Every call's directory is recorded, the executor's shared by its node's two calls.
	placed := enginetest.OfType(rows, journal.TypeWorkspacePlaced)
	require.Len(t, placed, 3)
	assert.Equal(t, "attempt", placed[0].Placement)
	assert.Equal(t, "checkout", placed[1].Placement)
	assert.Equal(t, placed[0].Workspace, placed[2].Workspace)
	assert.Equal(t, 1, placed[2].Alloc)
	assert.NotEqual(t, placed[0].Workspace, placed[1].Workspace)
	// The reviewer's checkout held the executor's pending work.
	assert.NotEqual(t, head, placed[1].Commit)
	assert.Equal(t, "v1", show(t, repo, placed[1].Commit, "src/feature.txt"))
	assert.Len(t, enginetest.OfType(rows, journal.TypeCommitIntent), 2)
	assert.Len(t, enginetest.OfType(rows, journal.TypeCommitResult), 2)
}

// TestAnExecutorWithoutARepositoryIsHeld: a run without a repository runs the roles that write
// nothing, and holds an executor call worktree_failed, saying why.
func TestAnExecutorWithoutARepositoryIsHeld(t *testing.T) {
	t.Parallel()
	svc, _ := enginetest.LocalService(t)
	_, end, rows := runIn(t, svc, "", `import { agent } from "crw:agent";
export default async function main() {
  const look = await agent.call({ role: "explorer", prompt: "look around" });
  const build = await agent.call({ role: "executor", prompt: "build" });
  return [look.status, build.status, build.reason];
}
`, "", nil)
	require.Equal(t, store.RunCompleted, end.Status)
	assert.JSONEq(t, `["completed", "held", "worktree_failed"]`, string(end.Result))
	held := enginetest.Terminal(t, rows, "c2")
	assert.Contains(t, held.Detail, "--repo")
	assert.Empty(t, enginetest.OfType(rows, journal.TypeWorkspacePlaced))
}

const tierStepWorkflow = `import { agent } from "crw:agent";
import crw from "crw";
const schema = { type: "object", properties: { done: { type: "boolean" } }, required: ["done"], additionalProperties: false };
const approve = { type: "object", properties: { approve: { type: "boolean" } }, required: ["approve"], additionalProperties: false };
const attempt = (f) => { try { f(); return "no throw"; } catch (e) { return e.code + ": " + e.message; } };
export default async function main() {
  let build = await agent.call({ role: "executor", node: "f", prompt: "build it", schema });
  const look = await agent.call({ role: "explorer", node: "f", prompt: "look" });
  const refusals = [attempt(() => crw.tierStep("f", look)), attempt(() => crw.tierStep("g", build))];
  const step = crw.tierStep("f", build);
  refusals.push(attempt(() => crw.tierStep("f", build)));
  if (step.decision) await crw.decide({ id: step.decision, question: "step up?", schema: approve });
  build = await agent.call({ role: "executor", node: "f", prompt: "build it", schema });
  const kept = await crw.commit("f", { message: "f" });
  return { first: "null_model", step, refusals, role: build.meta.role, status: build.status, kept };
}
`

const tierStepAnswers = `{"answers": [
  {"match": {"role": "executor"}, "turns": [{"text": "nope", "files": {"half.txt": "half\n"}}, {"text": "still nope"}]},
  {"match": {"role": "executor-t1"}, "turns": [{"json": {"done": true}, "files": {"whole.txt": "whole\n"}}]}
]}`

// TestATierStepMovesTheNodeUpInANewAllocation: the null_model of an executor call of a node is
// the evidence for its tier step; anything else is refused, and so is a second step. The next
// executor call runs as executor-t1 with that tier's pair, in a new worktree from the node's
// last commit (the run's head): what the lower tier left is not in it.
func TestATierStepMovesTheNodeUpInANewAllocation(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	svc, _ := enginetest.LocalService(t)
	roles := map[string]journal.Pair{"executor": {Model: "small"}, "executor-t1": {Model: "big", Effort: "high"}}
	_, end, rows := runIn(t, svc, repo, tierStepWorkflow, tierStepAnswers, func(o *engine.CreateOptions) { o.Roles = roles })
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	var out struct {
		Step struct {
			Node, Role, Evidence string
			Tier                 int
			Pair                 journal.Pair
			Decision             *string
		}
		Refusals     []string
		Role, Status string
		Kept         struct{ Commit string }
	}
	enginetest.Decode(t, end, &out)
	assert.Equal(t, "f", out.Step.Node)
	assert.Equal(t, 1, out.Step.Tier)
	assert.Equal(t, "executor-t1", out.Step.Role)
	assert.Equal(t, journal.Pair{Model: "big", Effort: "high"}, out.Step.Pair)
	assert.Equal(t, "c1", out.Step.Evidence)
	assert.Nil(t, out.Step.Decision)
	assert.Equal(t, []string{
		"invalid_request: crw.tierStep: the evidence is call c2, a explorer call: a tier step moves a node's executor calls",
		`invalid_request: crw.tierStep: the evidence is call c1, of node "f", not of node "g"`,
		`invalid_request: crw.tierStep: node "f" runs at the top tier already (executor-t1)`,
	}, out.Refusals)
	assert.Equal(t, "executor-t1", out.Role)
	assert.Equal(t, "completed", out.Status)
	files := git(t, repo, "ls-tree", "--name-only", out.Kept.Commit)
	assert.Equal(t, "README\nwhole.txt", files, "the new allocation started from the head, without the lower tier's files")

	placed := enginetest.OfType(rows, journal.TypeWorkspacePlaced)
	var allocs []int
	for _, p := range placed {
		if p.Placement == "attempt" {
			allocs = append(allocs, p.Alloc)
		}
	}
	assert.Equal(t, []int{1, 2}, allocs)
	steps := enginetest.OfType(rows, journal.TypeTierStep)
	require.Len(t, steps, 1)
	prepared := enginetest.OfType(rows, journal.TypePrepared)
	assert.Equal(t, "executor-t1", prepared[2].Role)
	assert.Equal(t, &journal.Pair{Model: "big", Effort: "high"}, prepared[2].ConfiguredPair)
}

// TestATierStepCanWaitForADecision: with --tier-steps ask the step asks a decision; the
// run waits for it, and the node's next executor call runs once it is approved.
func TestATierStepCanWaitForADecision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	svc, _ := enginetest.LocalService(t)
	id, end, _ := runIn(t, svc, repo, tierStepWorkflow, tierStepAnswers, func(o *engine.CreateOptions) { o.TierSteps = "ask" })
	require.Equal(t, store.RunWaitingDecision, end.Status, "%+v", end.Error)
	st, err := svc.Status(ctx, id)
	require.NoError(t, err)
	require.Len(t, st.Decisions, 1)
	assert.Equal(t, "tier-step/f/1", st.Decisions[0].ID)
	assert.Contains(t, st.Decisions[0].Question, `Move node "f"'s executor calls up to executor-t1`)
	_, err = svc.Answer(ctx, id, "tier-step/f/1", []byte(`{"approve": true}`), "uid 1", false)
	require.NoError(t, err)
	a, err := fake.ParseAnswers("answers.json", []byte(tierStepAnswers))
	require.NoError(t, err)
	end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, fake.NewHost(""))})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	var out struct {
		Step struct{ Decision *string }
		Role string
	}
	enginetest.Decode(t, end, &out)
	require.NotNil(t, out.Step.Decision)
	assert.Equal(t, "tier-step/f/1", *out.Step.Decision)
	assert.Equal(t, "executor-t1", out.Role)
}

// TestAnExecutorThatCommitsItselfKeepsAStrayRef: the commit the executor made is kept on its
// stray ref and recorded; crw.commit commits the worktree's tree on the commit the worktree was
// to be at, so the node's history does not take the executor's commit.
func TestAnExecutorThatCommitsItselfKeepsAStrayRef(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	head := git(t, repo, "rev-parse", "HEAD")
	svc, _ := enginetest.LocalService(t)
	id, end, rows := runIn(t, svc, repo, `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  await agent.call({ role: "executor", node: "n", prompt: "build" });
  return await crw.commit("n", { message: "kept" });
}
`, `{"answers": [{"turns": [{"text": "built", "files": {"a.txt": "a\n"}, "commit": true}]}]}`, nil)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	var kept struct{ Commit, Parent, Tree string }
	enginetest.Decode(t, end, &kept)
	done := enginetest.Terminal(t, rows, "c1")
	require.NotNil(t, done.HeadMoved)
	stray := "refs/crw/flow/" + id + "/stray/n/a1-c1"
	assert.Equal(t, &journal.HeadMoved{Start: head, Head: git(t, repo, "rev-parse", stray), Ref: stray}, done.HeadMoved)
	assert.Equal(t, "fake executor commit", git(t, repo, "log", "-1", "--format=%s", stray))
	assert.Equal(t, head, kept.Parent, "the node's commit is on the start, not on the executor's commit")
	assert.Equal(t, git(t, repo, "rev-parse", stray+"^{tree}"), kept.Tree)
	intent := enginetest.OfType(rows, journal.TypeCommitIntent)[0]
	assert.Equal(t, done.HeadMoved.Head, intent.Head, "the observed HEAD is the worktree's compare-and-swap's old value")
}

// TestARefMovedUnderTheRunIsAConflict: a node ref that moved under the run is never
// overwritten: crw.commit throws revision_conflict and the node's next call is held.
func TestARefMovedUnderTheRunIsAConflict(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	head := git(t, repo, "rev-parse", "HEAD")
	svc, _ := enginetest.LocalService(t)
	// The explorer's turn moves the node's ref, as another party could.
	script := `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  await agent.call({ role: "executor", node: "n", prompt: "build" });
  const first = await crw.commit("n", { message: "first" });
  await agent.call({ role: "explorer", node: "mover", prompt: "move it" });
  let conflict;
  try { await crw.commit("n", { message: "second" }); } catch (e) { conflict = e.code + "/" + e.reason; }
  const next = await agent.call({ role: "executor", node: "n", prompt: "more" });
  return { conflict, next: [next.status, next.reason] };
}
`
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(script), 0o644))
	ctx := context.Background()
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Repo: repo})
	require.NoError(t, err)
	mover := &refMover{Backend: fake.New(nil, nil), repo: repo, ref: "refs/crw/flow/" + id + "/nodes/n", to: head, t: t}
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: mover})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `{"conflict": "revision_conflict/revision_conflict", "next": ["held", "accepted_node_changed"]}`, string(end.Result))
	assert.Equal(t, head, git(t, repo, "rev-parse", mover.ref), "the ref is left where the other party put it")
}

// refMover is the fake backend, but the turn of node "mover" moves a ref of the repository
// first, as another party could while the run works.
type refMover struct {
	*fake.Backend
	repo, ref, to string
	t             testing.TB
}

func (m *refMover) Run(ctx context.Context, turn backend.Turn, rec backend.Recorder) backend.Outcome {
	if turn.Call.Node == "mover" {
		git(m.t, m.repo, "update-ref", m.ref, m.to)
	}
	return m.Backend.Run(ctx, turn, rec)
}

// sideEffects is the fake backend, but a turn of a node named in do first does what do says.
type sideEffects struct {
	*fake.Backend
	do map[string]func()
}

func (s *sideEffects) Run(ctx context.Context, turn backend.Turn, rec backend.Recorder) backend.Outcome {
	if f := s.do[turn.Call.Node]; f != nil {
		f()
	}
	return s.Backend.Run(ctx, turn, rec)
}

// TestTraceIsolationRecordsWritesWhereTheyDoNotBelong: with --trace-isolation a reviewer that
// changes its checkout, an executor during whose turn the repository's checkout changes, and
// another party's crw ref moving are warnings of the calls; a run without the flag takes no
// digests and writes none.
func TestTraceIsolationRecordsWritesWhereTheyDoNotBelong(t *testing.T) {
	t.Parallel()
	script := `import { agent } from "crw:agent";
export default async function main() {
  await agent.call({ role: "executor", node: "build", prompt: "build" });
  await agent.call({ role: "reviewer", node: "look", prompt: "look" });
  await agent.call({ role: "explorer", node: "quiet", prompt: "read only" });
  return "done";
}
`
	answers := `{"answers": [{"match": {"node": "look"}, "turns": [{"text": "looked", "files": {"notes.txt": "I wrote here\n"}}]}]}`
	for _, traced := range []bool{true, false} {
		repo := gitRepo(t, map[string]string{"README": "hello\n"})
		head := git(t, repo, "rev-parse", "HEAD")
		svc, _ := enginetest.LocalService(t)
		wf := filepath.Join(t.TempDir(), "wf.js")
		require.NoError(t, os.WriteFile(wf, []byte(script), 0o644))
		ctx := context.Background()
		id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Repo: repo, TraceIsolation: traced})
		require.NoError(t, err)
		a, err := fake.ParseAnswers("a.json", []byte(answers))
		require.NoError(t, err)
		b := &sideEffects{Backend: fake.New(a, nil), do: map[string]func(){
			"build": func() {
				require.NoError(t, os.WriteFile(filepath.Join(repo, "README"), []byte("changed in the checkout\n"), 0o644))
				git(t, repo, "update-ref", "refs/crw/flow/another-run/nodes/x", head)
			},
		}}
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: b})
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
		rows, err := svc.Rows(ctx, id)
		require.NoError(t, err)
		got := map[string]string{}
		for _, w := range enginetest.OfType(rows, journal.TypeWarning) {
			got[w.Call+" "+w.Reason] = w.Detail
		}
		if !traced {
			assert.Empty(t, got)
			continue
		}
		assert.Len(t, got, 3, "%v", got)
		assert.Contains(t, got["c1 executor_wrote_outside"], "changed while the executor worked")
		assert.Contains(t, got, "c1 shared_state_changed")
		assert.Contains(t, got["c2 read_role_wrote"], "a reviewer call changed its directory")
	}
}

const buildDecideCommit = `import { agent } from "crw:agent";
import crw from "crw";
const go = { type: "object", properties: { go: { type: "boolean" } }, required: ["go"], additionalProperties: false };
export default async function main() {
  await agent.call({ role: "executor", node: "n", prompt: "build" });
  await crw.decide({ id: "go", question: "commit?", schema: go });
  return (await crw.commit("n", { message: "kept" })).tree;
}
`

// TestAWorktreeIsMadeAgainFromTheJournal: a worktree deleted while its run waited, or one an
// earlier process left half made before it recorded it, is made again: at the commit it is to be
// at, with the tree the journal recorded.
func TestAWorktreeIsMadeAgainFromTheJournal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	answers := `{"answers": [{"match": {"role": "executor"}, "turns": [{"text": "built", "files": {"src/a.txt": "a\n"}}]}]}`
	for _, damage := range []string{"deleted", "half made"} {
		repo := gitRepo(t, map[string]string{"README": "hello\n"})
		svc, state := enginetest.LocalService(t)
		wf := filepath.Join(t.TempDir(), "wf.js")
		require.NoError(t, os.WriteFile(wf, []byte(buildDecideCommit), 0o644))
		id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Repo: repo})
		require.NoError(t, err)
		wt := filepath.Join(state, "flow", id, "worktrees", "n-n-a1")
		if damage == "half made" {
			// What a process killed between git's two steps leaves, before it recorded the row.
			require.NoError(t, os.MkdirAll(filepath.Dir(wt), 0o700))
			git(t, repo, "worktree", "add", "--detach", "--no-checkout", wt, "HEAD")
		}
		a, err := fake.ParseAnswers("a.json", []byte(answers))
		require.NoError(t, err)
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
		require.NoError(t, err)
		require.Equal(t, store.RunWaitingDecision, end.Status, "%s: %+v", damage, end.Error)
		if damage == "deleted" {
			require.NoError(t, os.RemoveAll(wt))
		}
		_, err = svc.Answer(ctx, id, "go", []byte(`{"go": true}`), "t", false)
		require.NoError(t, err)
		end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, end.Status, "%s: %+v", damage, end.Error)
		ref := "refs/crw/flow/" + id + "/nodes/n"
		assert.Equal(t, "README\nsrc", git(t, repo, "ls-tree", "--name-only", ref), damage)
		assert.Equal(t, "a", show(t, repo, ref, "src/a.txt"), damage)
		assert.Equal(t, 1, strings.Count(git(t, repo, "worktree", "list", "--porcelain"), "worktree "), damage)
	}
}

// TestAResumeRemovesTheLocksAKilledProcessLeft: a process killed while git moved the node's
// ref or the worktree's HEAD leaves git's lock file, after which every update of that ref or
// HEAD fails. The resumed process holds the run, so it removes them, and crw.commit moves both;
// a lock of another run's refs (one whose id the run's starts), of the user's branch or of a
// worktree outside the run's folder is no lock of the run's and stays.
func TestAResumeRemovesTheLocksAKilledProcessLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	head := git(t, repo, "rev-parse", "HEAD")
	gitDir := git(t, repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
	svc, state := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(buildDecideCommit), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Repo: repo})
	require.NoError(t, err)
	answers := `{"answers": [{"match": {"role": "executor"}, "turns": [{"text": "built", "files": {"src/a.txt": "a\n"}}]}]}`
	a, err := fake.ParseAnswers("a.json", []byte(answers))
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunWaitingDecision, end.Status, "%+v", end.Error)

	// What git leaves when it is killed holding a lock: the file, with the value it was
	// about to write.
	lock := func(path string) string {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(head+"\n"), 0o644))
		return path
	}
	wt := filepath.Join(state, "flow", id, "worktrees", "n-n-a1")
	admin := git(t, wt, "rev-parse", "--path-format=absolute", "--git-dir")
	require.True(t, strings.HasPrefix(admin, filepath.Join(gitDir, "worktrees")+string(filepath.Separator)), admin)
	own := []string{
		lock(filepath.Join(gitDir, "refs", "crw", "flow", id, "nodes", "n.lock")),
		lock(filepath.Join(admin, "HEAD.lock")),
	}
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	git(t, repo, "worktree", "add", "--detach", elsewhere, "HEAD")
	others := []string{
		lock(filepath.Join(gitDir, "refs", "crw", "flow", id+"x", "nodes", "n.lock")),
		lock(filepath.Join(gitDir, "refs", "heads", "topic.lock")),
		lock(filepath.Join(git(t, elsewhere, "rev-parse", "--path-format=absolute", "--git-dir"), "HEAD.lock")),
	}

	_, err = svc.Answer(ctx, id, "go", []byte(`{"go": true}`), "t", false)
	require.NoError(t, err)
	end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	ref := "refs/crw/flow/" + id + "/nodes/n"
	assert.Equal(t, "a", show(t, repo, ref, "src/a.txt"), "the node's ref moved")
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	var removed []string
	for _, w := range enginetest.OfType(rows, journal.TypeWarning) {
		assert.NotEqual(t, "worktree_head_moved", w.Reason, "the worktree's HEAD moved: %s", w.Detail)
		if w.Reason == "stale_lock_removed" {
			removed = append(removed, w.Detail)
		}
	}
	require.Len(t, removed, 1, "one warning names the locks removed")
	for _, p := range own {
		assert.NoFileExists(t, p)
		assert.Contains(t, removed[0], p)
	}
	for _, p := range others {
		assert.FileExists(t, p, "not the run's lock")
	}
}

// TestAChangedWorktreeHoldsTheNodesNextCall: a worktree changed while no process of the run
// watched it is not taken as the node's work: crw.commit throws restore_snapshot_mismatch and
// the worktree is left as it is, for a person to look at.
func TestAChangedWorktreeHoldsTheNodesNextCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	svc, state := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(strings.Replace(buildDecideCommit,
		`return (await crw.commit("n", { message: "kept" })).tree;`,
		`try { await crw.commit("n", { message: "kept" }); return "committed"; } catch (e) { return e.code + "/" + e.reason; }`, 1)), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Repo: repo})
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunWaitingDecision, end.Status)
	wt := filepath.Join(state, "flow", id, "worktrees", "n-n-a1")
	require.NoError(t, os.WriteFile(filepath.Join(wt, "intruder.txt"), []byte("not the agent's\n"), 0o644))
	_, err = svc.Answer(ctx, id, "go", []byte(`{"go": true}`), "t", false)
	require.NoError(t, err)
	end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `"revision_conflict/restore_snapshot_mismatch"`, string(end.Result))
	assert.Empty(t, git(t, repo, "for-each-ref", "refs/crw/flow/"+id+"/nodes/"))
	data, err := os.ReadFile(filepath.Join(wt, "intruder.txt"))
	require.NoError(t, err, "the worktree is left as it was found, for a person to look at")
	assert.Equal(t, "not the agent's\n", string(data))
}

// TestCommitAfterATierStepIsRefused: the allocation a tier step gave up is not committed.
func TestCommitAfterATierStepIsRefused(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	svc, _ := enginetest.LocalService(t)
	_, end, _ := runIn(t, svc, repo, `import { agent } from "crw:agent";
import crw from "crw";
const schema = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false };
export default async function main() {
  const build = await agent.call({ role: "executor", node: "n", prompt: "build", schema });
  crw.tierStep("n", build);
  try { await crw.commit("n", { message: "the lower tier's" }); return "committed"; } catch (e) { return e.code + ": " + e.message; }
}
`, `{"answers": [{"turns": [{"text": "no"}, {"text": "still no"}]}]}`, nil)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	var got string
	enginetest.Decode(t, end, &got)
	assert.Contains(t, got, `invalid_request: crw.commit: node "n" took a tier step`)
}

// TestKeepWorktreesLeavesThemInPlace: --keep-worktrees leaves an ended run's worktrees where
// they are, for a person to look at; without it they are gone.
func TestKeepWorktreesLeavesThemInPlace(t *testing.T) {
	t.Parallel()
	script := `import { agent } from "crw:agent";
export default async function main() {
  await agent.call({ role: "executor", node: "n", prompt: "build" });
  return "done";
}
`
	for _, keep := range []bool{true, false} {
		repo := gitRepo(t, map[string]string{"README": "hello\n"})
		svc, state := enginetest.LocalService(t)
		id, end, _ := runIn(t, svc, repo, script, `{"answers": [{"turns": [{"text": "ok", "files": {"a.txt": "a\n"}}]}]}`,
			func(o *engine.CreateOptions) { o.KeepWorktrees = keep })
		require.Equal(t, store.RunCompleted, end.Status)
		wt := filepath.Join(state, "flow", id, "worktrees", "n-n-a1")
		_, err := os.Stat(filepath.Join(wt, "a.txt"))
		if keep {
			assert.NoError(t, err, "the worktree is kept, with the executor's file")
			assert.Equal(t, 2, strings.Count(git(t, repo, "worktree", "list", "--porcelain"), "worktree "))
		} else {
			assert.True(t, os.IsNotExist(err))
			assert.Equal(t, 1, strings.Count(git(t, repo, "worktree", "list", "--porcelain"), "worktree "))
		}
	}
}

// TestANewAllocationSupersedesTheOldOnesCalls: a tier step's new allocation interrupts the
// calls still in flight on the node's old one: they end superseded / superseded_by_attempt.
func TestANewAllocationSupersedesTheOldOnesCalls(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	svc, _ := enginetest.LocalService(t)
	// The slow call's answer is held: only the new allocation ends its turn.
	_, end, rows := runWith(t, svc, repo, `import { agent } from "crw:agent";
import crw from "crw";
const schema = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false };
export default async function main() {
  const slow = agent.call({ role: "executor", node: "n", prompt: "slow", schema });
  const failed = await agent.call({ role: "executor", node: "n", prompt: "fails", schema });
  crw.tierStep("n", failed);
  const stronger = await agent.call({ role: "executor", node: "n", prompt: "again", schema });
  const old = await slow;
  return [failed.status, stronger.status, stronger.meta.role, old.status, old.reason];
}
`, `{"answers": [
  {"match": {"call": 1}, "turns": [{"json": {"ok": true}}]},
  {"match": {"call": 2}, "turns": [{"text": "no"}, {"text": "no"}]},
  {"match": {"call": 3}, "turns": [{"json": {"ok": true}}]}
]}`, func(b backend.Backend) backend.Backend {
		return enginetest.GateAnswers(b, func(c backend.Call) bool { return c.Index == 1 })
	})
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["null_model", "completed", "executor-t1", "superseded", "superseded_by_attempt"]`, string(end.Result))
	interrupts := enginetest.OfType(rows, journal.TypeInterruptRequested)
	require.Len(t, interrupts, 1)
	assert.Equal(t, "c1", interrupts[0].Call)
	assert.Equal(t, "superseded_by_attempt", interrupts[0].Reason)
}

// TestAShadowReplaysCommitsAndCommitsNothing: a shadow replay of a run that committed, stepped a
// tier and took a decision gives the script the recorded results, reports no difference, and
// moves no ref; a changed script that commits another node stops there, as its resume would.
func TestAShadowReplaysCommitsAndCommitsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	svc, _ := enginetest.LocalService(t)
	id, end, _ := runIn(t, svc, repo, tierStepWorkflow, tierStepAnswers, nil)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	refs := git(t, repo, "for-each-ref")
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(tierStepWorkflow), 0o644))
	rep, err := svc.Shadow(ctx, id, shadow.Options{Script: wf})
	require.NoError(t, err)
	assert.False(t, rep.Differs(), "%+v", rep)
	assert.Equal(t, store.RunCompleted, rep.Status)
	assert.JSONEq(t, string(end.Result), string(rep.Result))
	assert.Equal(t, refs, git(t, repo, "for-each-ref"), "a shadow moves no ref")

	changed := filepath.Join(t.TempDir(), "changed.js")
	require.NoError(t, os.WriteFile(changed, []byte(strings.Replace(tierStepWorkflow, `crw.commit("f"`, `crw.commit("g"`, 1)), 0o644))
	rep, err = svc.Shadow(ctx, id, shadow.Options{Script: changed})
	require.NoError(t, err)
	assert.Equal(t, store.RunFailed, rep.Status)
	require.NotNil(t, rep.Error)
	// The run would stop at the commit, whatever the script does with what it is thrown: so
	// does the shadow.
	assert.Equal(t, "divergence", rep.Error.Reason, "%+v", rep.Error)
	assert.Contains(t, rep.Error.Detail, `crw.commit #1: the script commits node "g" with message "f"; the journal's commit #1 is of node "f" with message "f"`)
	require.Error(t, rep.Stop)
}

// TestARefusedCommitReplaysRefused: a crw.commit the worktrees' state refused (no executor of
// the node had run) is recorded, so the resumed process, whose node has a worktree by then,
// refuses it again rather than committing, and the next commit takes its own place.
func TestARefusedCommitReplaysRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	svc, _ := enginetest.LocalService(t)
	id := buildThenDecide(t, svc, repo, `
  let early;
  try { await crw.commit("n", { message: "too early" }); early = "committed"; } catch (e) { early = e.code; }
  await agent.call({ role: "executor", node: "n", prompt: "build" });
  await crw.decide({ id: "go", question: "commit?", schema: go });
  const kept = await crw.commit("n", { message: "kept" });
  return [early, kept.message];`)
	end := answerGo(t, svc, id)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["invalid_request", "kept"]`, string(end.Result))
	assert.Equal(t, "2", git(t, repo, "rev-list", "--count", "refs/crw/flow/"+id+"/nodes/n"), "one commit on the head")
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	intents := enginetest.OfType(rows, journal.TypeCommitIntent)
	require.Len(t, intents, 2)
	assert.Equal(t, "invalid_request", intents[0].Status)
	assert.Contains(t, intents[0].Detail, `node "n" has no worktree`)
}

// TestAStepThatWaitsHoldsTheNextExecutor: under --tier-steps ask, an executor call of the
// node made before the step's decision is answered ends held missing_step_decision, sending
// nothing; once the owner declines, the next one is refused policy_refused.
func TestAStepThatWaitsHoldsTheNextExecutor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
import crw from "crw";
const schema = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false };
const wait = { type: "object", properties: { go: { type: "boolean" } }, required: ["go"], additionalProperties: false };
export default async function main() {
  const build = await agent.call({ role: "executor", node: "n", prompt: "build", schema });
  const step = crw.tierStep("n", build);
  const early = await agent.call({ role: "executor", node: "n", prompt: "too early", schema });
  await crw.decide({ id: "later", question: "go on?", schema: wait });
  const late = await agent.call({ role: "executor", node: "n", prompt: "after the answer", schema });
  return [step.decision, early.status, early.reason, late.status, late.reason];
}
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Repo: repo, TierSteps: "ask"})
	require.NoError(t, err)
	a, err := fake.ParseAnswers("a.json", []byte(`{"answers": [{"match": {"call": 1}, "turns": [{"text": "no"}, {"text": "no"}]}]}`))
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunWaitingDecision, end.Status, "%+v", end.Error)
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	early := enginetest.Terminal(t, rows, "c2")
	assert.Equal(t, "missing_step_decision", early.Reason)
	assert.Contains(t, early.Detail, "crw flow answer "+id+" tier-step/n/1")
	assert.Equal(t, []string{"prepared", "held"}, enginetest.Types(enginetest.CallRows(rows, "c2")), "nothing was sent")
	_, err = svc.Answer(ctx, id, "tier-step/n/1", []byte(`{"approve": false}`), "t", false)
	require.NoError(t, err)
	_, err = svc.Answer(ctx, id, "later", []byte(`{"go": true}`), "t", false)
	require.NoError(t, err)
	end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["tier-step/n/1", "held", "missing_step_decision", "refused", "policy_refused"]`, string(end.Result))
}

// TestAFileRewrittenInTheIndexsSecondIsSeen: an executor that rewrites a file with one of the
// same size in the second crw.commit last wrote the worktree's index: the reviewer's checkout
// and the executor's recorded tree hold the new content (git's racy-index check is kept).
func TestAFileRewrittenInTheIndexsSecondIsSeen(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	svc, _ := enginetest.LocalService(t)
	_, end, rows := runIn(t, svc, repo, `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  await agent.call({ role: "executor", node: "a", prompt: "one" });
  await crw.commit("a", { message: "one" });
  await agent.call({ role: "executor", node: "a", prompt: "two" });
  await agent.call({ role: "explorer", node: "wait", prompt: "slow" });
  await agent.call({ role: "reviewer", node: "a", prompt: "review" });
  return (await crw.commit("a", { message: "two" })).tree;
}
`, `{"answers": [
  {"match": {"call": 1}, "turns": [{"text": "one", "files": {"a.txt": "a1\n"}}]},
  {"match": {"call": 2}, "turns": [{"text": "two", "files": {"a.txt": "a2\n"}}]},
  {"match": {"call": 3}, "turns": [{"text": "waited", "delay_ms": 1100}]},
  {"match": {"call": 4}, "turns": [{"text": "reviewed"}]}
]}`, nil)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	two := enginetest.Terminal(t, rows, "c2")
	assert.Equal(t, "a2", git(t, repo, "show", two.Tree+":a.txt"), "the executor's recorded tree")
	placed := enginetest.OfType(rows, journal.TypeWorkspacePlaced)
	review := placed[len(placed)-1]
	require.Equal(t, "c4", review.Call)
	assert.Equal(t, "a2", git(t, repo, "show", review.Commit+":a.txt"), "the reviewer's checkout")
}

// TestACommitErrorNamesItsLogLineNotGitsWords: an error crw.commit throws because git failed
// carries crw's words, its code and reason and the log line that has git's; the run's log has
// them on that line.
func TestACommitErrorNamesItsLogLineNotGitsWords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	svc, state := enginetest.LocalService(t)
	id := buildThenDecide(t, svc, repo, `
  await agent.call({ role: "executor", node: "n", prompt: "build" });
  await crw.decide({ id: "go", question: "commit?", schema: go });
  try { await crw.commit("n", { message: "kept" }); return "committed"; } catch (e) { return [e.code, e.reason, e.message]; }`)

	// While no process holds the run, the index of the node's worktree is damaged: git cannot
	// read the worktree.
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	placed := enginetest.OfType(rows, journal.TypeWorkspacePlaced)
	require.Len(t, placed, 1)
	dotGit, err := os.ReadFile(filepath.Join(placed[0].Workspace, ".git"))
	require.NoError(t, err)
	admin := strings.TrimSpace(strings.TrimPrefix(string(dotGit), "gitdir:"))
	require.NoError(t, os.WriteFile(filepath.Join(admin, "index"), []byte("DIRC not an index"), 0o644))

	end := answerGo(t, svc, id)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	var got []string
	require.NoError(t, json.Unmarshal(end.Result, &got))
	require.Len(t, got, 3)
	assert.Equal(t, "revision_conflict", got[0])
	assert.Equal(t, "restore_snapshot_mismatch", got[1])
	msg := got[2]
	assert.Contains(t, msg, `crw.commit: node "n": its worktree `+placed[0].Workspace+` cannot be read (revision_conflict, restore_snapshot_mismatch; its account is in `)
	for _, raw := range []string{"fatal", "index file", "DIRC"} {
		assert.NotContains(t, msg, raw, "git's words are in the log, not in the error")
	}
	m := regexp.MustCompile(`its account is in (\S+), on the line with correlationId (crw-[0-9a-f]{16})\)$`).FindStringSubmatch(msg)
	require.NotNil(t, m, msg)
	assert.Equal(t, filepath.Join(state, "flow", id, "crw.log"), m[1])
	log, err := os.ReadFile(m[1])
	require.NoError(t, err)
	var line map[string]any
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, m[2]) {
			require.NoError(t, json.Unmarshal([]byte(l), &line))
		}
	}
	require.NotNil(t, line, "the log has the line with the correlation id:\n%s", log)
	assert.Equal(t, "revision_conflict", line["code"])
	assert.Contains(t, line["cause"], "index file", "the log line has git's words")

	// The refusal is recorded with the same words: a replay throws the same error.
	rows, err = svc.Rows(ctx, id)
	require.NoError(t, err)
	intents := enginetest.OfType(rows, journal.TypeCommitIntent)
	require.Len(t, intents, 1)
	assert.Equal(t, msg, intents[0].Detail)
}

// oneBuild is the answers of a run whose one executor call writes a.txt.
const oneBuild = `{"answers": [{"turns": [{"text": "ok", "files": {"a.txt": "a\n"}}]}]}`

// buildThenDecide runs a workflow whose main has body (crw, agent and a decision schema go in
// scope) on repo until it waits for its decision "go".
func buildThenDecide(t *testing.T, svc *engine.Service, repo, body string) string {
	t.Helper()
	ctx := context.Background()
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
import crw from "crw";
const go = { type: "object", properties: { go: { type: "boolean" } }, required: ["go"], additionalProperties: false };
export default async function main() {`+body+`
}
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Repo: repo})
	require.NoError(t, err)
	a, err := fake.ParseAnswers("a.json", []byte(oneBuild))
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunWaitingDecision, end.Status)
	return id
}

// answerGo answers the decision "go" and resumes the run to its end.
func answerGo(t *testing.T, svc *engine.Service, id string) *store.Status {
	t.Helper()
	ctx := context.Background()
	_, err := svc.Answer(ctx, id, "go", []byte(`{"go": true}`), "t", false)
	require.NoError(t, err)
	a, err := fake.ParseAnswers("a.json", []byte(oneBuild))
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
	require.NoError(t, err)
	return end
}

// seeingBackend is the fake backend that notes, for each turn, the call's directory and what
// its file feature.txt held then ("-" when there was none).
type seeingBackend struct {
	*fake.Backend
	mu   sync.Mutex
	seen map[string][2]string // prompt → directory, feature.txt
}

func (b *seeingBackend) Run(ctx context.Context, t backend.Turn, rec backend.Recorder) backend.Outcome {
	data, err := os.ReadFile(filepath.Join(t.Call.Workspace, "feature.txt"))
	text := string(data)
	if err != nil {
		text = "-"
	}
	b.mu.Lock()
	b.seen[t.Task] = [2]string{t.Call.Workspace, text}
	b.mu.Unlock()
	return b.Backend.Run(ctx, t, rec)
}

// TestReadCallsReuseOneCheckout: the calls of roles that write nothing, one after the other,
// work in one checkout, moved to the commit each is to see (the head, or a node's pending
// work); one a call changed is never handed on, and a new one is made instead. None is left
// when the run ends.
func TestReadCallsReuseOneCheckout(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	head := git(t, repo, "rev-parse", "HEAD")
	svc, _ := enginetest.LocalService(t)
	script := `import { agent } from "crw:agent";
export default async function main() {
  for (let i = 0; i < 3; i++) await agent.call({ role: "reviewer", node: "look", prompt: "look " + i });
  await agent.call({ role: "executor", node: "feature", prompt: "build" });
  await agent.call({ role: "reviewer", node: "feature", prompt: "review the build" });
  await agent.call({ role: "reviewer", node: "look", prompt: "look again" });
  await agent.call({ role: "explorer", node: "look", prompt: "scribble" });
  await agent.call({ role: "reviewer", node: "look", prompt: "after the scribble" });
  return "done";
}
`
	answers := `{"answers": [
  {"match": {"role": "executor"}, "turns": [{"text": "built", "files": {"feature.txt": "v1\n"}}]},
  {"match": {"role": "explorer"}, "turns": [{"text": "wrote where it should not", "files": {"scratch.txt": "x\n"}}]}
]}`
	a, err := fake.ParseAnswers("answers.json", []byte(answers))
	require.NoError(t, err)
	seeing := &seeingBackend{Backend: fake.New(a, fake.NewHost("")), seen: map[string][2]string{}}
	ctx := context.Background()
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(script), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Repo: repo})
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: seeing})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)

	placed := map[string]*journal.Row{}
	for _, p := range enginetest.OfType(rows, journal.TypeWorkspacePlaced) {
		placed[p.Call] = &p
	}
	byPrompt := map[string]*journal.Row{}
	for _, p := range enginetest.OfType(rows, journal.TypePrepared) {
		byPrompt[p.Prompt] = placed[p.Call]
	}
	first := byPrompt["look 0"].Workspace
	for _, prompt := range []string{"look 1", "look 2", "review the build", "look again", "scribble"} {
		assert.Equal(t, first, byPrompt[prompt].Workspace, "%s works in the first call's checkout", prompt)
	}
	assert.Equal(t, head, byPrompt["look 2"].Commit)
	assert.NotEqual(t, head, byPrompt["review the build"].Commit, "the review sees the build's pending work")
	assert.Equal(t, head, byPrompt["look again"].Commit)
	assert.Equal(t, [2]string{first, "v1\n"}, seeing.seen["review the build"], "the checkout was moved to the pending work")
	assert.Equal(t, [2]string{first, "-"}, seeing.seen["look again"], "and back to the head")
	assert.NotEqual(t, first, byPrompt["after the scribble"].Workspace, "a checkout a call wrote in is not handed on")
	assert.Equal(t, []string{repo}, worktrees(t, repo), "no checkout is left")
}

// TestAResumeRemovesTheCheckoutsAKilledProcessLeft: checkouts an earlier process of the run
// left (it was killed before it let them go: a pristine one, a changed one, a half-made one)
// are removed when the next process opens the repository, never handed to a call: crw holds no
// seal of them, and a call could have rewritten what they keep.
func TestAResumeRemovesTheCheckoutsAKilledProcessLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gitRepo(t, map[string]string{"README": "hello\n"})
	head := git(t, repo, "rev-parse", "HEAD")
	svc, state := enginetest.LocalService(t)
	id, end, _ := runIn(t, svc, repo, `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  await agent.call({ role: "reviewer", node: "look", prompt: "before" });
  await crw.decide({ id: "go", question: "Go on?", schema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false } });
  await agent.call({ role: "reviewer", node: "look", prompt: "after" });
  return "done";
}
`, "", nil)
	require.Equal(t, store.RunWaitingDecision, end.Status, "%+v", end.Error)
	assert.Equal(t, []string{repo}, worktrees(t, repo), "a run that waits keeps no idle checkout")

	r, err := workspace.Open(ctx, repo)
	require.NoError(t, err)
	root := filepath.Join(state, "flow", id, "worktrees")
	left := map[string]bool{}
	for _, name := range []string{"c2-g1", "c8-g1", "c9-g1"} {
		p := filepath.Join(root, name)
		left[p] = true
		require.NoError(t, r.AddWorktree(ctx, p, head))
		_, err := r.MarkPristine(p)
		require.NoError(t, err)
	}
	git(t, repo, "worktree", "lock", "--reason", workspace.MakingReason, filepath.Join(root, "c8-g1"))
	require.NoError(t, os.WriteFile(filepath.Join(root, "c9-g1", "README"), []byte("changed\n"), 0o644))

	_, err = svc.Answer(ctx, id, "go", []byte(`{"ok": true}`), "uid 1", false)
	require.NoError(t, err)
	seeing := &seeingBackend{Backend: fake.New(nil, fake.NewHost("")), seen: map[string][2]string{}}
	end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: seeing})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	got := seeing.seen["after"][0]
	assert.Equal(t, filepath.Join(root, "c2-g1"), got, "the call's own name, the leftover there removed first")
	assert.Equal(t, [2]string{got, "-"}, seeing.seen["after"], "a fresh checkout of the head")
	assert.Equal(t, []string{repo}, worktrees(t, repo))
	assert.NoDirExists(t, root)
}
