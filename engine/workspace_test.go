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
	"github.com/crw-dev/crw/engine/enginetest"
	"github.com/crw-dev/crw/engine/fake"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

var (
	gitRepo = enginetest.GitRepo
	git     = enginetest.Git
)

// show is a file of a commit of repo.
func show(t testing.TB, repo, commit, path string) string {
	return git(t, repo, "show", commit+":"+path)
}

// runIn creates a run of script on repo and executes it with the fake backend's answers.
func runIn(t testing.TB, svc *engine.Service, repo, script, answers string, configure func(*engine.CreateOptions)) (string, *store.Status, []journal.Row) {
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
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, fake.NewHost(""))})
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
