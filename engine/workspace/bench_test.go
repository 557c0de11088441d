package workspace_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/crw-dev/crw/engine/workspace"
)

// bigRepo is a repository of n files in 100 folders, committed once.
func bigRepo(b *testing.B, n int) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "repo")
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("pkg%02d", i%100), fmt.Sprintf("file%05d.go", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("package pkg\n\n// File %d.\nvar V%d = %d\n", i, i, i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	run(b, dir, "init", "-q", "-b", "main")
	run(b, dir, "add", "-A")
	run(b, dir, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "first")
	return dir
}

func run(b *testing.B, dir string, args ...string) {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// BenchmarkPlaceAndCommit is what a node costs crw's git side on a repository of 10,000 files:
// its worktree placed, one file changed, and the change committed as crw.commit does it (the
// pending tree, the commit, the node's ref and the worktree's HEAD by compare-and-swap). The
// worktree's removal is not timed. Compare with BenchmarkGitByHand, run beside it.
func BenchmarkPlaceAndCommit(b *testing.B) {
	dir := bigRepo(b, 10000)
	ctx := context.Background()
	repo, err := workspace.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	head, err := repo.Resolve(ctx, "HEAD")
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		path := filepath.Join(root, "n-"+strconv.Itoa(i))
		if err := repo.AddWorktree(ctx, path, head); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(path, "pkg00", "new.go"), []byte("package pkg\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		tree, err := repo.PendingTree(ctx, path, false)
		if err != nil {
			b.Fatal(err)
		}
		commit, err := repo.CommitTree(ctx, tree, head, "node "+strconv.Itoa(i)+"\n", workspace.Identity{Name: "b", Email: "b@b", At: time.Unix(1e9, 0)})
		if err != nil {
			b.Fatal(err)
		}
		if err := repo.SwapRef(ctx, "refs/crw/flow/bench/nodes/n"+strconv.Itoa(i), commit, ""); err != nil {
			b.Fatal(err)
		}
		if err := repo.SwapHead(ctx, path, commit, head); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := repo.RemoveWorktree(ctx, path); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkGitByHand is the same by hand: git worktree add, one file changed, git add -A and
// git commit in the worktree.
func BenchmarkGitByHand(b *testing.B) {
	dir := bigRepo(b, 10000)
	root := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		path := filepath.Join(root, "h-"+strconv.Itoa(i))
		run(b, dir, "worktree", "add", "--detach", "--quiet", path, "HEAD")
		if err := os.WriteFile(filepath.Join(path, "pkg00", "new.go"), []byte("package pkg\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		run(b, path, "add", "-A")
		run(b, path, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "node "+strconv.Itoa(i))
		b.StopTimer()
		run(b, dir, "worktree", "remove", "--force", path)
		b.StartTimer()
	}
}

// BenchmarkCheckout is what a call of a role that writes nothing costs crw's git side, on
// repositories of 1,000 and 10,000 files: a fresh checkout (git worktree add, and its removal,
// which the run pays too), against an idle one handed on (checked pristine, and moved to a
// commit one file away, or left at its commit).
func BenchmarkCheckout(b *testing.B) {
	for _, files := range []int{1000, 10000} {
		dir := bigRepo(b, files)
		ctx := context.Background()
		repo, err := workspace.Open(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		first, err := repo.Resolve(ctx, "HEAD")
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "pkg00", "new.go"), []byte("package pkg\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		run(b, dir, "add", "-A")
		run(b, dir, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "second")
		second, err := repo.Resolve(ctx, "HEAD")
		if err != nil {
			b.Fatal(err)
		}
		root := b.TempDir()
		b.Run(fmt.Sprintf("files=%d/fresh", files), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				path := filepath.Join(root, "f-"+strconv.Itoa(i))
				if err := repo.AddWorktree(ctx, path, first); err != nil {
					b.Fatal(err)
				}
				if _, err := repo.MarkPristine(path); err != nil {
					b.Fatal(err)
				}
				if err := repo.RemoveWorktree(ctx, path); err != nil {
					b.Fatal(err)
				}
			}
		})
		path := filepath.Join(root, "reused")
		if err := repo.AddWorktree(ctx, path, first); err != nil {
			b.Fatal(err)
		}
		seal, err := repo.MarkPristine(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("files=%d/reused", files), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if why, err := repo.Pristine(ctx, path, first, seal); err != nil || why != "" {
					b.Fatal(why, err)
				}
			}
		})
		at := first
		b.Run(fmt.Sprintf("files=%d/reused-moved", files), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				to := second
				if at == second {
					to = first
				}
				if why, err := repo.Pristine(ctx, path, at, seal); err != nil || why != "" {
					b.Fatal(why, err)
				}
				s, err := repo.Switch(ctx, path, at, to)
				if err != nil {
					b.Fatal(err)
				}
				seal = s
				at = to
			}
		})
	}
}
