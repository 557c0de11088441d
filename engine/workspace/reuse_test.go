package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/workspace"
)

// pristineCheckout makes a checkout of head under a new folder, as the runner makes one, and
// returns it with its seal.
func pristineCheckout(t *testing.T, repo *workspace.Repo, head string) (string, workspace.Seal) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c1-g1")
	require.NoError(t, repo.AddWorktree(context.Background(), path, head))
	seal, err := repo.MarkPristine(path)
	require.NoError(t, err)
	require.NotEmpty(t, seal)
	return path, seal
}

// adminOf is the admin folder a checkout's .git names.
func adminOf(t *testing.T, p string) string {
	data, err := os.ReadFile(filepath.Join(p, ".git"))
	require.NoError(t, err)
	return strings.TrimSpace(strings.TrimPrefix(string(data), "gitdir: "))
}

// TestPristineFindsWhatACallChanged: a checkout is handed to the next call only as it was
// made; every change a call can leave in it, including one it hid from git status, is found.
func TestPristineFindsWhatACallChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, _ := newRepo(t)
	// A .gitignore in the head's tree, so an ignored file can be made.
	require.NoError(t, os.WriteFile(filepath.Join(repo.Dir, ".gitignore"), []byte("*.log\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(repo.Dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo.Dir, "sub", "b.txt"), []byte("b\n"), 0o644))
	git(t, repo.Dir, "add", "-A")
	git(t, repo.Dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "second")
	head := git(t, repo.Dir, "rev-parse", "HEAD")
	other := t.TempDir()
	git(t, other, "init", "-q")

	clean, seal := pristineCheckout(t, repo, head)
	why, err := repo.Pristine(ctx, clean, head, seal)
	require.NoError(t, err)
	assert.Empty(t, why, "a checkout nobody touched")
	why, err = repo.Pristine(ctx, clean, head, seal)
	require.NoError(t, err)
	assert.Empty(t, why, "looking changes nothing")

	write := func(name, text string) func(t *testing.T, p string) {
		return func(t *testing.T, p string) {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(p, name)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(p, name), []byte(text), 0o644))
		}
	}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, p string)
		want   string
	}{
		{"a tracked file rewritten", write("a.txt", "changed\n"), "git status lists"},
		{"a tracked file rewritten to the same size", write("a.txt", "b\n"), "git status lists"},
		{"a tracked file deleted", func(t *testing.T, p string) { require.NoError(t, os.Remove(filepath.Join(p, "a.txt"))) }, "git status lists"},
		{"a new file", write("notes.md", "x\n"), "git status lists"},
		{"a new file in a new folder", write("new/deep/x.txt", "x\n"), "git status lists"},
		{"an ignored file", write("build.log", "x\n"), "git status lists"},
		{"an empty folder", func(t *testing.T, p string) {
			require.NoError(t, os.MkdirAll(filepath.Join(p, "empty", "inner"), 0o755))
		}, "git clean lists"},
		{"a file made executable", func(t *testing.T, p string) { require.NoError(t, os.Chmod(filepath.Join(p, "a.txt"), 0o755)) }, "git status lists"},
		{"a change hidden by assume-unchanged", func(t *testing.T, p string) {
			git(t, p, "update-index", "--assume-unchanged", "a.txt")
			write("a.txt", "hidden\n")(t, p)
			assert.Empty(t, git(t, p, "status", "--porcelain"), "git status does not see it")
		}, "git status lists"},
		{"a change staged and the file put back", func(t *testing.T, p string) {
			write("a.txt", "staged\n")(t, p)
			git(t, p, "add", "a.txt")
			write("a.txt", "a\n")(t, p)
		}, ""}, // the index is the kept one again, and the files are the head's: nothing differs
		{"a commit of its own", func(t *testing.T, p string) {
			write("a.txt", "committed\n")(t, p)
			git(t, p, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "mine")
		}, "its HEAD is"},
		{"a nested repository", func(t *testing.T, p string) { git(t, p, "init", "-q", "inner") }, "git status lists"},
		{"a file made a hard link to the repository's own", func(t *testing.T, p string) {
			require.NoError(t, os.Remove(filepath.Join(p, "a.txt")))
			require.NoError(t, os.Link(filepath.Join(repo.Dir, "a.txt"), filepath.Join(p, "a.txt")))
			assert.Empty(t, git(t, p, "status", "--porcelain"), "git status does not see it")
		}, "is a hard link"},
		{"a .git in a folder, as a submodule's", write("sub/inner/.git", "gitdir: /elsewhere\n"), "a submodule or a repository"},
		{"a FIFO", func(t *testing.T, p string) {
			require.NoError(t, syscall.Mkfifo(filepath.Join(p, "sub", "pipe"), 0o644))
			assert.Empty(t, git(t, p, "status", "--porcelain", "--ignored"), "git status does not see it")
		}, "no file, folder or link"},
		{"the kept index rewritten to hide a change", func(t *testing.T, p string) {
			write("a.txt", "EVIL\n")(t, p)
			git(t, p, "update-index", "--skip-worktree", "a.txt")
			admin := adminOf(t, p)
			data, err := os.ReadFile(filepath.Join(admin, "index"))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(admin, "crw-pristine-index"), data, 0o644))
		}, "the index crw kept"},
		{"its worktree config changed", func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(filepath.Join(adminOf(t, p), "config.worktree"), []byte("[core]\n\tsparseCheckout = true\n"), 0o644))
		}, "config.worktree"},
		{"a ref of its own", func(t *testing.T, p string) { git(t, p, "update-ref", "refs/bisect/bad", "HEAD") }, "its admin folder"},
		{"its .git pointing at another repository", write(".git", "gitdir: "+filepath.Join(other, ".git")+"\n"), "its .git names"},
		{"its .git made a folder", func(t *testing.T, p string) {
			require.NoError(t, os.Remove(filepath.Join(p, ".git")))
			require.NoError(t, os.Mkdir(filepath.Join(p, ".git"), 0o755))
		}, "its .git is not the file git made"},
		{"its .git a link", func(t *testing.T, p string) {
			gitFile := filepath.Join(p, ".git")
			data, err := os.ReadFile(gitFile)
			require.NoError(t, err)
			elsewhere := filepath.Join(t.TempDir(), "git-file")
			require.NoError(t, os.WriteFile(elsewhere, data, 0o644))
			require.NoError(t, os.Remove(gitFile))
			require.NoError(t, os.Symlink(elsewhere, gitFile))
		}, "its .git is not the file git made"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, seal := pristineCheckout(t, repo, head)
			tc.change(t, p)
			why, err := repo.Pristine(ctx, p, head, seal)
			require.NoError(t, err)
			if tc.want == "" {
				assert.Empty(t, why)
				return
			}
			assert.Contains(t, why, tc.want)
		})
	}
}

// TestSwitchRewritesOnlyWhatDiffers: a pristine checkout moved to another commit holds that
// commit's files, and a file both commits share is the same file, not written again.
func TestSwitchRewritesOnlyWhatDiffers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, first := newRepo(t)
	require.NoError(t, os.WriteFile(filepath.Join(repo.Dir, "kept.txt"), []byte("kept\n"), 0o644))
	git(t, repo.Dir, "add", "-A")
	git(t, repo.Dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "kept")
	from := git(t, repo.Dir, "rev-parse", "HEAD")
	require.NoError(t, os.WriteFile(filepath.Join(repo.Dir, "a.txt"), []byte("second\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(repo.Dir, "new.txt"), []byte("new\n"), 0o644))
	git(t, repo.Dir, "add", "-A")
	git(t, repo.Dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "second")
	to := git(t, repo.Dir, "rev-parse", "HEAD")

	p, made := pristineCheckout(t, repo, from)
	why, err := repo.Pristine(ctx, p, from, made)
	require.NoError(t, err)
	require.Empty(t, why)
	inode := func(name string) uint64 {
		st, err := os.Stat(filepath.Join(p, name))
		require.NoError(t, err)
		return st.Sys().(*syscall.Stat_t).Ino
	}
	kept := inode("kept.txt")
	seal, err := repo.Switch(ctx, p, from, to)
	require.NoError(t, err)
	assert.NotEqual(t, made, seal, "a new seal for the moved checkout")
	assert.Equal(t, to, repo.HeadOf(p))
	for name, want := range map[string]string{"a.txt": "second\n", "new.txt": "new\n", "kept.txt": "kept\n"} {
		data, err := os.ReadFile(filepath.Join(p, name))
		require.NoError(t, err)
		assert.Equal(t, want, string(data), name)
	}
	assert.Equal(t, kept, inode("kept.txt"), "a file both commits hold is left alone")
	why, err = repo.Pristine(ctx, p, to, seal)
	require.NoError(t, err)
	assert.Empty(t, why, "a switched checkout is pristine at its new commit")
	assert.False(t, repo.HalfMade(p))

	// Back to the first commit: kept.txt goes.
	seal, err = repo.Switch(ctx, p, to, first)
	require.NoError(t, err)
	assert.NoFileExists(t, filepath.Join(p, "kept.txt"))
	why, err = repo.Pristine(ctx, p, first, seal)
	require.NoError(t, err)
	assert.Empty(t, why)
}

// TestASwitchThatFailsLeavesAHalfMadeCheckout: a checkout git could not move is locked as being
// made, which is what a switch a killed process cut short leaves: never handed to a call.
func TestASwitchThatFailsLeavesAHalfMadeCheckout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, head := newRepo(t)
	p, _ := pristineCheckout(t, repo, head)
	_, err := repo.Switch(ctx, p, head, strings.Repeat("1", 40))
	require.Error(t, err)
	assert.True(t, repo.HalfMade(p))
	require.NoError(t, repo.RemoveWorktree(ctx, p))
	assert.NoDirExists(t, p)
}

// TestPristineWithoutASeal: a checkout crw holds no seal of (one an earlier process made) is
// not taken for pristine.
func TestPristineWithoutASeal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, head := newRepo(t)
	p, _ := pristineCheckout(t, repo, head)
	why, err := repo.Pristine(ctx, p, head, "")
	require.NoError(t, err)
	assert.Contains(t, why, "no seal")
}

// TestASparseCheckoutIsHandedOn: the settings git gives a checkout of a sparse repository
// (config.worktree, info/sparse-checkout) are under the seal, not a change.
func TestASparseCheckoutIsHandedOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, head := newRepo(t)
	p := filepath.Join(t.TempDir(), "c1-g1")
	require.NoError(t, repo.AddWorktree(ctx, p, head))
	git(t, p, "sparse-checkout", "set", "--no-cone", "/a.txt")
	seal, err := repo.MarkPristine(p)
	require.NoError(t, err)
	why, err := repo.Pristine(ctx, p, head, seal)
	require.NoError(t, err)
	assert.Empty(t, why)
	require.NoError(t, os.WriteFile(filepath.Join(adminOf(t, p), "info", "sparse-checkout"), []byte("/*\n"), 0o644))
	why, err = repo.Pristine(ctx, p, head, seal)
	require.NoError(t, err)
	assert.Contains(t, why, "changed")
}

// TestHeadOfADetachedOrABranchWorktree: a worktree's HEAD is read from its admin folder while
// it is detached, and through git once a call checked out a branch there.
func TestHeadOfADetachedOrABranchWorktree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, head := newRepo(t)
	p, _ := pristineCheckout(t, repo, head)
	got, err := repo.Head(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, head, got)
	git(t, p, "checkout", "-q", "-b", "topic")
	require.NoError(t, os.WriteFile(filepath.Join(p, "a.txt"), []byte("on a branch\n"), 0o644))
	git(t, p, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "on topic")
	assert.Empty(t, repo.HeadOf(p), "a branch is no object id")
	got, err = repo.Head(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, git(t, p, "rev-parse", "HEAD"), got)
	assert.NotEqual(t, head, got)
}
