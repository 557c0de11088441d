package fake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/crw-dev/crw/engine/workspace"
)

// writeFiles does what a scripted turn does to its call's directory P before it answers: its
// files written or deleted, then, with commit, a commit of P's tree on P's HEAD. It never
// leaves P (os.Root refuses a path through a link that points out), and doing it again is
// doing nothing more: a resumed run that finds the turn again finds P as the turn left it.
func writeFiles(ctx context.Context, dir string, t *Turn) error {
	if dir == "" {
		return errors.New("the call has no directory of its own to write in (the run has no repository)")
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	paths := make([]string, 0, len(t.Files))
	for p := range t.Files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		content := t.Files[p]
		if content == nil {
			if err := root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s: %w", p, err)
			}
			continue
		}
		if d := filepath.Dir(p); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
		if err := root.WriteFile(p, []byte(*content), 0o644); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	if !t.Commit {
		return nil
	}
	repo, err := workspace.Open(ctx, dir)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	head, err := repo.Head(ctx, dir)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	tree, err := repo.PendingTree(ctx, dir, false)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if was, err := repo.TreeOf(ctx, head); err == nil && was == tree {
		return nil // committed already (a turn found again), or nothing to commit
	}
	commit, err := repo.CommitTree(ctx, tree, head, "fake executor commit\n",
		workspace.Identity{Name: "fake executor", Email: "executor@fake", At: time.Unix(0, 0)})
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return repo.SwapHead(ctx, dir, commit, head)
}
