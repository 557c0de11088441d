package workspace_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/workspace"
)

func newRepo(t *testing.T) (*workspace.Repo, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	git(t, dir, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644))
	git(t, dir, "add", "-A")
	git(t, dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
	repo, err := workspace.Open(context.Background(), filepath.Join(dir, "."))
	require.NoError(t, err)
	return repo, git(t, dir, "rev-parse", "HEAD")
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

func TestEscapeMakesAnyNodeOneSafeComponent(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	long := strings.Repeat("x", 300)
	for _, node := range []string{"build", "a/b", "a%2Fb", "..", ".", "a.lock", "-rf", "@{u}", "ü", "a b", "", long, long + "y", "HEAD", "refs/heads/main"} {
		e := workspace.Escape(node)
		assert.NotContains(t, e, "/", node)
		assert.NotContains(t, e, ".", node)
		assert.LessOrEqual(t, len(e), 120, node)
		require.NotEmpty(t, e)
		if other, ok := seen[e]; ok {
			t.Fatalf("%q and %q escape to the same %q", node, other, e)
		}
		seen[e] = node
		// git takes it as a ref component.
		cmd := exec.Command("git", "check-ref-format", "refs/crw/flow/r/nodes/"+e)
		assert.NoError(t, cmd.Run(), "%q → %q is no ref", node, e)
	}
	assert.Equal(t, "build", workspace.Escape("build"))
	assert.Equal(t, "a%2Fb", workspace.Escape("a/b"))
	assert.Equal(t, "a%252Fb", workspace.Escape("a%2Fb"))
}

func TestSwapRefMovesOnlyFromTheValueGiven(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, head := newRepo(t)
	tree, err := repo.TreeOf(ctx, head)
	require.NoError(t, err)
	c1, err := repo.CommitTree(ctx, tree, head, "one\n", workspace.Identity{Name: "n", Email: "e", At: time.Unix(1e9, 0)})
	require.NoError(t, err)
	const ref = "refs/crw/flow/r/nodes/n"
	require.NoError(t, repo.SwapRef(ctx, ref, head, ""), "created against no ref")
	err = repo.SwapRef(ctx, ref, c1, "")
	assert.True(t, errors.Is(err, workspace.ErrRefMoved), "a second create: %v", err)
	err = repo.SwapRef(ctx, ref, c1, c1)
	assert.True(t, errors.Is(err, workspace.ErrRefMoved), "from a value it does not hold: %v", err)
	got, err := repo.Ref(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, head, got, "a refused swap leaves it")
	require.NoError(t, repo.SwapRef(ctx, ref, c1, head))
	got, err = repo.Ref(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, c1, got)
	none, err := repo.Ref(ctx, "refs/crw/flow/r/nodes/absent")
	require.NoError(t, err)
	assert.Empty(t, none)
}

// TestCommitTreeIsAFunctionOfItsInputs: made twice from the same inputs, a commit is the same
// object, whatever the clock, the environment or the repository's config say.
func TestCommitTreeIsAFunctionOfItsInputs(t *testing.T) {
	ctx := context.Background()
	repo, head := newRepo(t)
	tree, err := repo.TreeOf(ctx, head)
	require.NoError(t, err)
	who := workspace.Identity{Name: "n", Email: "e@x", At: time.Unix(1.7e9, 0)}
	a, err := repo.CommitTree(ctx, tree, head, "msg\n", who)
	require.NoError(t, err)
	t.Setenv("GIT_AUTHOR_DATE", "@5 +0000")
	t.Setenv("GIT_COMMITTER_NAME", "someone else")
	git(t, repo.Dir, "config", "user.name", "configured")
	time.Sleep(1100 * time.Millisecond)
	b, err := repo.CommitTree(ctx, tree, head, "msg\n", who)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	c, err := repo.CommitTree(ctx, tree, head, "other\n", who)
	require.NoError(t, err)
	assert.NotEqual(t, a, c)
}

// TestPendingTreeCanLeaveTheIndexAlone: a snapshot of a worktree's work stages nothing in its
// own index; the commit's staging does.
func TestPendingTreeCanLeaveTheIndexAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, head := newRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	require.NoError(t, repo.AddWorktree(ctx, wt, head))
	require.NoError(t, os.WriteFile(filepath.Join(wt, "new.txt"), []byte("new\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(wt, "a.txt")))
	tree, err := repo.PendingTree(ctx, wt, true)
	require.NoError(t, err)
	assert.Equal(t, "new.txt", git(t, wt, "ls-tree", "--name-only", tree))
	assert.Equal(t, "D a.txt\n?? new.txt", git(t, wt, "status", "--porcelain"), "the worktree's index is as it was")
	again, err := repo.PendingTree(ctx, wt, false)
	require.NoError(t, err)
	assert.Equal(t, tree, again)
	assert.Equal(t, "D  a.txt\nA  new.txt", git(t, wt, "status", "--porcelain"))
}

// TestPendingTreeTakesNoIndexLock: the commit's staging goes into a copy of the worktree's
// index, so the index.lock a git killed with an earlier process of the run left behind does not
// stop it, and it leaves none of its own.
func TestPendingTreeTakesNoIndexLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, head := newRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	require.NoError(t, repo.AddWorktree(ctx, wt, head))
	admin := strings.TrimSpace(git(t, wt, "rev-parse", "--absolute-git-dir"))
	require.NoError(t, os.WriteFile(filepath.Join(admin, "index.lock"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(wt, "new.txt"), []byte("new\n"), 0o644))
	tree, err := repo.PendingTree(ctx, wt, false)
	require.NoError(t, err)
	assert.Equal(t, "a.txt\nnew.txt", git(t, wt, "ls-tree", "--name-only", tree))
	require.NoError(t, os.Remove(filepath.Join(admin, "index.lock")))
	assert.Equal(t, "A  new.txt", git(t, wt, "status", "--porcelain"), "the worktree's index has the staging")
	left, err := filepath.Glob(filepath.Join(admin, "*index*"))
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(admin, "index")}, left)
}

// TestAddWorktreeHolding: a worktree made again to hold a call's tree has its HEAD at the
// commit and that tree in its index and files, and is unlocked only then.
func TestAddWorktreeHolding(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, head := newRepo(t)
	work := filepath.Join(t.TempDir(), "work")
	require.NoError(t, repo.AddWorktree(ctx, work, head))
	require.NoError(t, os.WriteFile(filepath.Join(work, "new.txt"), []byte("new\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(work, "a.txt")))
	tree, err := repo.PendingTree(ctx, work, true)
	require.NoError(t, err)

	wt := filepath.Join(t.TempDir(), "wt")
	require.NoError(t, repo.AddWorktreeHolding(ctx, wt, head, tree))
	assert.Equal(t, head, git(t, wt, "rev-parse", "HEAD"))
	assert.Equal(t, "D  a.txt\nA  new.txt", git(t, wt, "status", "--porcelain"))
	_, err = os.Stat(filepath.Join(wt, "a.txt"))
	assert.True(t, os.IsNotExist(err), "a.txt is not in the tree")
	got, err := repo.PendingTree(ctx, wt, true)
	require.NoError(t, err)
	assert.Equal(t, tree, got)
	assert.False(t, repo.HalfMade(wt))
	assert.NotContains(t, git(t, repo.Dir, "worktree", "list", "--porcelain"), "locked")
}

// TestWorktreesComeAndGoInParallel: adds and removes of worktrees of one repository at once,
// which git alone races on, all succeed and leave git's list clean.
func TestWorktreesComeAndGoInParallel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, head := newRepo(t)
	root := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 6; i++ {
				path := filepath.Join(root, fmt.Sprintf("w%d-%d", w, i))
				if err := repo.AddWorktree(ctx, path, head); err != nil {
					errs <- err
					return
				}
				if _, err := os.Stat(filepath.Join(path, "a.txt")); err != nil {
					errs <- err
					return
				}
				if err := repo.RemoveWorktree(ctx, path); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.NoError(t, repo.Prune(ctx))
	list, err := repo.Worktrees(ctx)
	require.NoError(t, err)
	assert.Len(t, list, 1)
	require.NoError(t, repo.RemoveWorktree(ctx, filepath.Join(root, "never-made")), "a worktree that is not there is nothing to remove")
}

// TestGitSeesOnlyTheRepositoryItIsGiven: variables that would point git elsewhere (a hook's
// GIT_DIR, GIT_INDEX_FILE, GIT_WORK_TREE) change nothing.
func TestGitSeesOnlyTheRepositoryItIsGiven(t *testing.T) {
	ctx := context.Background()
	repo, head := newRepo(t)
	other, _ := newRepo(t)
	t.Setenv("GIT_DIR", other.GitDir)
	t.Setenv("GIT_WORK_TREE", other.Dir)
	t.Setenv("GIT_INDEX_FILE", filepath.Join(t.TempDir(), "index"))
	got, err := repo.Resolve(ctx, "HEAD")
	require.NoError(t, err)
	assert.Equal(t, head, got)
	_, err = repo.Resolve(ctx, "--output=/tmp/x")
	assert.Error(t, err)
	_, err = repo.Resolve(ctx, "no-such-branch")
	assert.ErrorContains(t, err, `"no-such-branch" names no commit`)
}

func TestFindSaysWhenThereIsNoCheckout(t *testing.T) {
	t.Parallel()
	_, err := workspace.Find(context.Background(), t.TempDir())
	assert.True(t, errors.Is(err, workspace.ErrNotRepository), "%v", err)
}

// TestAWorktreesGitFileIsNotTrusted: an agent that points its worktree's .git at a git
// directory of its own (with a filter that runs a command) or at the user's checkout's gets
// none of crw's commands run there: they go through the admin folder the repository keeps.
func TestAWorktreesGitFileIsNotTrusted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, head := newRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	require.NoError(t, repo.AddWorktree(ctx, wt, head))
	require.NoError(t, os.WriteFile(filepath.Join(wt, "b.txt"), []byte("b\n"), 0o644))
	marker := filepath.Join(t.TempDir(), "pwned")
	evil := filepath.Join(t.TempDir(), "evil")
	git(t, t.TempDir(), "init", "-q", evil)
	git(t, evil, "config", "filter.pwn.clean", "sh -c 'touch "+marker+"; cat'")
	require.NoError(t, os.MkdirAll(filepath.Join(evil, ".git", "info"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(evil, ".git", "info", "attributes"), []byte("* filter=pwn\n"), 0o644))
	for _, target := range []string{filepath.Join(evil, ".git"), repo.GitDir} {
		require.NoError(t, os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+target+"\n"), 0o644))
		got, err := repo.PendingTree(ctx, wt, false)
		require.NoError(t, err)
		_, statErr := os.Stat(marker)
		assert.True(t, os.IsNotExist(statErr), "the agent's filter ran")
		assert.Contains(t, git(t, wt+"/..", "--git-dir="+repo.GitDir, "ls-tree", "-r", "--name-only", got), "b.txt")
		headNow, err := repo.Head(ctx, wt)
		require.NoError(t, err)
		assert.Equal(t, head, headNow)
		assert.Equal(t, "main", git(t, repo.Dir, "rev-parse", "--abbrev-ref", "HEAD"), "the user's HEAD stays on its branch")
	}
}

// TestWhatAKilledGitLeavesIsCleared: git worktree add killed at its worst instants leaves an
// admin folder with an empty commondir (every git worktree command of the repository then
// fails), or a worktree registered and locked with crw's reason whose folder is half made or
// gone. The next add works, a half-made worktree is known as such, and RemoveWorktreesUnder
// leaves nothing of any of them.
func TestWhatAKilledGitLeavesIsCleared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, head := newRepo(t)
	root := filepath.Join(t.TempDir(), "worktrees")
	admins := filepath.Join(repo.GitDir, "worktrees")

	// A worktree registered and locked while being made, its folder gone; and one half made.
	gone, half := filepath.Join(root, "n-a-a1"), filepath.Join(root, "n-b-a1")
	git(t, repo.Dir, "-c", "core.hooksPath=/dev/null", "worktree", "add", "--detach", "--no-checkout", "--lock", "--reason", workspace.MakingReason, gone, head)
	require.NoError(t, os.RemoveAll(gone))
	git(t, repo.Dir, "worktree", "add", "--detach", "--no-checkout", "--lock", "--reason", workspace.MakingReason, half, head)
	// A broken admin folder: git worktree list fails on it.
	broken := filepath.Join(admins, "c1-g1")
	require.NoError(t, os.MkdirAll(broken, 0o755))
	for name, content := range map[string]string{"locked": workspace.MakingReason, "HEAD": head + "\n", "gitdir": filepath.Join(root, "c1-g1", ".git") + "\n", "commondir": ""} {
		require.NoError(t, os.WriteFile(filepath.Join(broken, name), []byte(content), 0o644))
	}
	err := exec.Command("git", "-C", repo.Dir, "worktree", "list").Run()
	require.Error(t, err, "git itself fails on the broken folder")

	require.NoError(t, repo.AddWorktree(ctx, filepath.Join(root, "c2-g1"), head), "an add after the broken folder works")
	assert.True(t, repo.HalfMade(half))
	assert.False(t, repo.HalfMade(filepath.Join(root, "c2-g1")), "a worktree AddWorktree finished is not half made")

	require.NoError(t, repo.RemoveWorktreesUnder(ctx, root, nil))
	list := git(t, repo.Dir, "worktree", "list", "--porcelain")
	assert.Equal(t, 1, strings.Count(list, "worktree "), list)
	entries, _ := os.ReadDir(admins)
	assert.Empty(t, entries, "no admin folder is left")
	left, _ := os.ReadDir(root)
	assert.Empty(t, left, "no folder is left under the root")
}

// TestRemoveStaleLocksTakesOnlyAFolderOfRefs: a prefix that is no folder of refs (no trailing
// slash, outside refs/, climbing out) is refused and nothing is removed.
func TestRemoveStaleLocksTakesOnlyAFolderOfRefs(t *testing.T) {
	t.Parallel()
	repo, head := newRepo(t)
	lock := filepath.Join(repo.GitDir, "refs", "crw", "flow", "r", "nodes", "n.lock")
	require.NoError(t, os.MkdirAll(filepath.Dir(lock), 0o755))
	require.NoError(t, os.WriteFile(lock, []byte(head+"\n"), 0o644))
	for _, prefix := range []string{"refs/crw/flow/r", "crw/flow/r/", "refs/crw/../crw/flow/r/", ""} {
		removed, err := repo.RemoveStaleLocks(prefix, t.TempDir())
		assert.Error(t, err, prefix)
		assert.Empty(t, removed, prefix)
		assert.FileExists(t, lock, prefix)
	}
	removed, err := repo.RemoveStaleLocks("refs/crw/flow/r/", t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, []string{lock}, removed)
	assert.NoFileExists(t, lock)
}

// TestAMirrorHoldsTheRunsRefsFirst: with a Mirror, SwapRef and DeleteRef move the ref there
// first, by the same compare-and-swap: a mirror whose ref holds another value refuses
// (ErrRefMoved) and one that cannot be reached fails, and either way the ref here is left as it
// was. A clone of the mirror fetches the refs as they are there.
func TestAMirrorHoldsTheRunsRefsFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, head := newRepo(t)
	tree, err := repo.TreeOf(ctx, head)
	require.NoError(t, err)
	c1, err := repo.CommitTree(ctx, tree, head, "one\n", workspace.Identity{Name: "n", Email: "e", At: time.Unix(1e9, 0)})
	require.NoError(t, err)
	mirror := filepath.Join(t.TempDir(), "mirror.git")
	git(t, filepath.Dir(mirror), "init", "-q", "--bare", mirror)
	git(t, repo.Dir, "push", "-q", mirror, "main")
	repo.Mirror = mirror
	const ref = "refs/crw/flow/r/nodes/n"
	there := func() string { return git(t, mirror, "for-each-ref", "--format=%(objectname)", ref) }
	here := func() string { got, err := repo.Ref(ctx, ref); require.NoError(t, err); return got }

	require.NoError(t, repo.SwapRef(ctx, ref, head, ""))
	assert.Equal(t, head, there())
	assert.Equal(t, head, here())

	// Another host moved it at the mirror: this one's swap is refused, here too.
	c2, err := repo.CommitTree(ctx, tree, head, "two\n", workspace.Identity{Name: "n", Email: "e", At: time.Unix(1e9, 0)})
	require.NoError(t, err)
	git(t, repo.Dir, "push", "-q", mirror, c2+":refs/heads/other") // c2 is known there
	git(t, mirror, "update-ref", ref, c2)
	err = repo.SwapRef(ctx, ref, c1, head)
	assert.ErrorIs(t, err, workspace.ErrRefMoved)
	assert.Equal(t, head, here(), "a swap the mirror refused is not made here")
	git(t, mirror, "update-ref", ref, head)

	require.NoError(t, repo.SwapRef(ctx, ref, c1, head))
	assert.Equal(t, c1, there())
	assert.Equal(t, c1, here())

	// A clone fetches the run's refs as the mirror holds them.
	clone, err := workspace.Clone(ctx, mirror, filepath.Join(t.TempDir(), "clone"))
	require.NoError(t, err)
	require.NoError(t, clone.Fetch(ctx, mirror, "+refs/crw/flow/r/*:refs/crw/flow/r/*"))
	got, err := clone.Ref(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, c1, got)
	again, err := workspace.Clone(ctx, mirror, clone.Dir)
	require.NoError(t, err, "a clone there already is taken as it is")
	assert.Equal(t, clone.Dir, again.Dir)

	require.NoError(t, repo.DeleteRef(ctx, ref, c1))
	assert.Empty(t, there())
	assert.Empty(t, here())
	require.NoError(t, clone.Fetch(ctx, mirror, "+refs/crw/flow/r/*:refs/crw/flow/r/*"))
	got, err = clone.Ref(ctx, ref)
	require.NoError(t, err)
	assert.Empty(t, got, "a ref gone from the mirror is gone from a fetch")

	// A mirror that cannot be reached: nothing moves here.
	repo.Mirror = filepath.Join(t.TempDir(), "gone.git")
	err = repo.SwapRef(ctx, ref, head, "")
	require.Error(t, err)
	assert.NotErrorIs(t, err, workspace.ErrRefMoved)
	assert.Contains(t, err.Error(), "the run's refs cannot be kept at "+repo.Mirror)
	assert.Empty(t, here())
}
