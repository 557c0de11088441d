// Package workspace is the run's hold on a git repository: the worktrees its calls work in,
// snapshots of their trees, and the refs it moves, only ever by compare-and-swap. It runs the
// git command line, so a worktree crw makes is one `git worktree list` shows and every git tool
// understands. It knows nothing of journals: engine/runner decides what to place and records it.
package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// RunRefs is the prefix of every ref a run makes in its repository.
func RunRefs(run string) string { return "refs/crw/flow/" + run + "/" }

// HeadRef is the ref a run with a clone URL keeps its head commit on there.
func HeadRef(run string) string { return RunRefs(run) + "head" }

// ZeroID is the object id git reads as "no such ref" in a compare-and-swap.
const ZeroID = "0000000000000000000000000000000000000000"

// ErrRefMoved is a compare-and-swap whose ref did not hold the old value.
var ErrRefMoved = errors.New("the ref does not hold the value the run recorded")

// ErrNotRepository is a directory that is in no git checkout.
var ErrNotRepository = errors.New("not in a git checkout")

// Repo is a repository a run works on: its top level and its common git directory (the one
// every worktree shares, where the refs are).
type Repo struct {
	Dir    string
	GitDir string
	// Git is the git binary ("git" on PATH when empty).
	Git string
	// Mirror is the clone URL the run's refs are kept at besides ("" for none): SwapRef and
	// DeleteRef move a ref there first, by the same compare-and-swap, so a host that fetches
	// the run's refs from it goes on from where this one was.
	Mirror string

	mu     sync.Mutex
	admins map[string]string // worktree → the admin folder git keeps for it in GitDir
}

// Find returns the top level of the git checkout around dir, or ErrNotRepository.
func Find(ctx context.Context, dir string) (string, error) {
	out, err := run(ctx, "", dir, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		var ge *GitError
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "not a git repository") {
			return "", ErrNotRepository
		}
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// Open opens the repository whose checkout holds dir.
func Open(ctx context.Context, dir string) (*Repo, error) {
	top, err := Find(ctx, dir)
	if err != nil {
		return nil, err
	}
	common, err := run(ctx, "", top, nil, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return nil, err
	}
	return &Repo{Dir: top, GitDir: strings.TrimSpace(common)}, nil
}

// Resolve returns the commit ref names.
func (r *Repo) Resolve(ctx context.Context, ref string) (string, error) {
	if strings.HasPrefix(ref, "-") {
		return "", fmt.Errorf("%q is not a ref", ref)
	}
	out, err := r.git(ctx, r.Dir, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("%q names no commit of %s", ref, r.Dir)
	}
	return strings.TrimSpace(out), nil
}

// Ref returns the commit a ref holds, "" when there is no such ref.
func (r *Repo) Ref(ctx context.Context, ref string) (string, error) {
	out, err := r.git(ctx, r.Dir, nil, "for-each-ref", "--format=%(objectname)", ref)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "" {
			return line, nil
		}
	}
	return "", nil
}

// Refs lists the refs under prefix with the object each holds, for digests.
func (r *Repo) Refs(ctx context.Context, prefix string) (string, error) {
	return r.git(ctx, r.Dir, nil, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
}

// SwapRef moves ref to value if it holds old ("" : only if there is no such ref), atomically
// (git update-ref's own compare-and-swap). A ref that holds anything else is ErrRefMoved.
func (r *Repo) SwapRef(ctx context.Context, ref, value, old string) error {
	if err := r.pushSwap(ctx, ref, value, old); err != nil {
		return err
	}
	if old == "" {
		old = ZeroID
	}
	_, err := r.git(ctx, r.Dir, nil, "update-ref", "-m", "crw", ref, value, old)
	var ge *GitError
	if errors.As(err, &ge) && (strings.Contains(ge.Stderr, "but expected") || strings.Contains(ge.Stderr, "already exists") ||
		strings.Contains(ge.Stderr, "unable to resolve reference") || strings.Contains(ge.Stderr, "cannot lock ref")) {
		return fmt.Errorf("%s: %w (%s)", ref, ErrRefMoved, strings.TrimSpace(ge.Stderr))
	}
	return err
}

// DeleteRef deletes ref if it holds old.
func (r *Repo) DeleteRef(ctx context.Context, ref, old string) error {
	if err := r.pushSwap(ctx, ref, "", old); err != nil {
		return err
	}
	_, err := r.git(ctx, r.Dir, nil, "update-ref", "-d", ref, old)
	return err
}

// pushSwap moves ref at the Mirror to value ("": deletes it) if it holds old there ("": only
// if it has no such ref), with git push's own compare-and-swap (--force-with-lease). A ref
// there that holds anything else is ErrRefMoved; a mirror that cannot be reached is an error
// of its own, and the ref is left as it is here too.
func (r *Repo) pushSwap(ctx context.Context, ref, value, old string) error {
	if r.Mirror == "" {
		return nil
	}
	if !strings.HasPrefix(ref, "refs/") {
		return fmt.Errorf("%q is not a full ref name", ref)
	}
	_, err := r.git(ctx, r.Dir, nil, "push", "--quiet", "--no-verify", "--force-with-lease="+ref+":"+old, "--", r.Mirror, value+":"+ref)
	if err != nil {
		var ge *GitError
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "[rejected]") {
			return fmt.Errorf("%s at %s: %w (%s)", ref, r.Mirror, ErrRefMoved, strings.TrimSpace(ge.Stderr))
		}
		return &MirrorError{URL: r.Mirror, Says: gitSays(err), Err: err}
	}
	return nil
}

// MirrorError is a mirror that could not be reached or written: what git said of it, in one
// line, and git's error.
type MirrorError struct {
	URL, Says string
	Err       error
}

func (e *MirrorError) Error() string {
	return "the run's refs cannot be kept at " + e.URL + ": " + e.Says
}

func (e *MirrorError) Unwrap() error { return e.Err }

// gitSays is the first line git printed of a failure (the command line left out), else err.
func gitSays(err error) string {
	var ge *GitError
	if errors.As(err, &ge) {
		if line, _, _ := strings.Cut(strings.TrimSpace(ge.Stderr), "\n"); line != "" {
			return line
		}
	}
	return err.Error()
}

// Clone makes dir a clone of url without a checkout (its worktrees are made by the run), or
// leaves it when it is one already.
func Clone(ctx context.Context, url, dir string) (*Repo, error) {
	if r, err := Open(ctx, dir); err == nil && r.Dir == dir {
		return r, nil
	}
	tmp := dir + ".cloning"
	_ = os.RemoveAll(tmp) // a clone a killed process left half made
	if _, err := run(ctx, "", filepath.Dir(dir), nil, "clone", "--no-checkout", "--quiet", "--", url, tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	return Open(ctx, dir)
}

// Fetch fetches refspecs from url, refs that are gone there removed here (--prune), and no tags.
func (r *Repo) Fetch(ctx context.Context, url string, refspecs ...string) error {
	for _, spec := range refspecs {
		if strings.HasPrefix(spec, "-") {
			return fmt.Errorf("%q is not a refspec", spec)
		}
	}
	_, err := r.git(ctx, r.Dir, nil, append([]string{"fetch", "--quiet", "--no-tags", "--prune", "--", url}, refspecs...)...)
	return err
}

// AddWorktree makes a detached worktree at path checked out at commit. Git's own bookkeeping
// of worktrees is done under the repository's worktree lock (see locked); the checkout, which
// takes the time, is not. The worktree stays locked (git worktree lock, reason MakingReason)
// until its checkout is complete, so one that a killed process left half made is known as such
// (HalfMade) and is made again rather than taken for a worktree that was changed.
func (r *Repo) AddWorktree(ctx context.Context, path, commit string) error {
	return r.AddWorktreeHolding(ctx, path, commit, "")
}

// AddWorktreeHolding is AddWorktree, and then, when tree is not "", the worktree's index and
// files are made tree's (its HEAD stays at commit), before its lock is let go: a worktree
// restored to the tree a call left is half made until it holds that tree.
func (r *Repo) AddWorktreeHolding(ctx context.Context, path, commit, tree string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	r.mu.Lock()
	delete(r.admins, path)
	r.mu.Unlock()
	err := r.locked(ctx, func() error {
		r.repairAdmins()
		// --force twice: a worktree whose folder is gone (deleted by hand, or by a crash) is
		// registered still, locked too when a killed process was making it, and is made again.
		_, err := r.git(ctx, r.Dir, nil, "worktree", "add", "--force", "--force", "--detach", "--no-checkout",
			"--lock", "--reason", MakingReason, "--quiet", "--end-of-options", path, commit)
		return err
	})
	if err != nil {
		return err
	}
	_, err = r.inWorktree(ctx, path, nil, "reset", "--quiet", "--hard", "HEAD")
	if err == nil && tree != "" {
		_, err = r.inWorktree(ctx, path, nil, "read-tree", "--reset", "-u", "--end-of-options", tree)
	}
	if err != nil {
		_ = r.RemoveWorktree(context.WithoutCancel(ctx), path) // half made: nothing of it stays
		return err
	}
	return r.locked(ctx, func() error {
		_, err := r.git(ctx, r.Dir, nil, "worktree", "unlock", path)
		return err
	})
}

// MakingReason is the reason of the lock a worktree holds while AddWorktree makes it.
const MakingReason = "crw: being made"

// HalfMade reports whether the worktree at path is one AddWorktree had not finished: its
// checkout was cut short (the process that made it was killed), and what it holds is not what
// it was to hold.
func (r *Repo) HalfMade(path string) bool {
	admin, err := r.adminDir(path)
	if err != nil {
		// A folder git does not know as a worktree is no worktree crw finished either.
		_, statErr := os.Lstat(path)
		return statErr == nil
	}
	data, err := os.ReadFile(filepath.Join(admin, "locked"))
	return err == nil && strings.TrimSpace(string(data)) == MakingReason
}

// RemoveWorktree removes the worktree at path, whatever it holds, and what git keeps of it,
// locked or not. A path that is not there has nothing to remove but what git keeps of it. Its
// files go first; git forgets it under the worktree lock.
func (r *Repo) RemoveWorktree(ctx context.Context, path string) error {
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return r.forget(ctx, path)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		if err := os.RemoveAll(path); err != nil {
			return err
		}
		return r.forget(ctx, path)
	}
	for _, e := range entries {
		if e.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(path, e.Name())); err != nil {
				return err
			}
		}
	}
	r.mu.Lock()
	delete(r.admins, path)
	r.mu.Unlock()
	return r.locked(ctx, func() error {
		if _, err := r.git(ctx, r.Dir, nil, "worktree", "remove", "--force", "--force", path); err != nil {
			// A folder git does not know as a worktree (its admin folder is gone).
			if err := os.RemoveAll(path); err != nil {
				return err
			}
		}
		return nil
	})
}

// repairAdmins removes the admin folders a killed git worktree add left broken (its HEAD,
// commondir or gitdir file missing or empty): with one of them there, every git worktree
// command of the repository fails. Run under the worktree lock, which every git worktree add
// of crw's holds: an add that completed never leaves such a folder.
func (r *Repo) repairAdmins() {
	root := filepath.Join(r.GitDir, "worktrees")
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		for _, f := range []string{"HEAD", "commondir", "gitdir"} {
			if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
				_ = os.RemoveAll(dir)
				break
			}
		}
	}
	r.mu.Lock()
	r.admins = nil
	r.mu.Unlock()
}

// RemoveStaleLocks removes the lock files a git killed with crw's process left behind, after
// which every later update of what they lock fails: the ref locks (<ref>.lock) under prefix, a
// folder of refs that ends with "/", and the HEAD.lock of each worktree whose folder is under
// root. Only the holder of the run those refs and worktrees are of may call it: no git of crw's
// works on them then, so a lock there is one nobody holds. No other lock of the repository
// (another prefix's, a worktree elsewhere, packed-refs.lock) is touched. It returns the files
// it removed, and goes on past an error, returning the first.
func (r *Repo) RemoveStaleLocks(prefix, root string) ([]string, error) {
	if !strings.HasPrefix(prefix, "refs/") || !strings.HasSuffix(prefix, "/") || slices.Contains(strings.Split(prefix, "/"), "..") {
		return nil, fmt.Errorf("%q is no folder of refs", prefix)
	}
	var removed []string
	var first error
	remove := func(p string) {
		if st, err := os.Lstat(p); err != nil || !st.Mode().IsRegular() {
			return
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			if first == nil {
				first = err
			}
			return
		}
		removed = append(removed, p)
	}
	refs := filepath.Join(r.GitDir, filepath.FromSlash(prefix))
	err := filepath.WalkDir(refs, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) && first == nil {
				first = err
			}
			return nil
		}
		if d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".lock") {
			remove(p) // no ref's name ends with .lock: git refuses one
		}
		return nil
	})
	if err != nil && first == nil {
		first = err
	}
	roots := []string{filepath.Clean(root)}
	if real, err := filepath.EvalSymlinks(root); err == nil && real != roots[0] {
		roots = append(roots, real)
	}
	admins := filepath.Join(r.GitDir, "worktrees")
	entries, err := os.ReadDir(admins)
	if err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
		first = err
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(admins, e.Name(), "gitdir"))
		if err != nil {
			continue
		}
		gitdir := strings.TrimSpace(string(data)) // <worktree>/.git
		if !filepath.IsAbs(gitdir) {
			gitdir = filepath.Join(admins, e.Name(), gitdir)
		}
		wt := filepath.Dir(gitdir)
		for _, top := range roots {
			if strings.HasPrefix(wt, top+string(filepath.Separator)) {
				remove(filepath.Join(admins, e.Name(), "HEAD.lock"))
				break
			}
		}
	}
	return removed, first
}

// forget drops what git keeps of a worktree whose folder is gone, locked or not: git worktree
// prune leaves a locked one registered for ever.
func (r *Repo) forget(ctx context.Context, path string) error {
	admin, err := r.adminDir(path)
	if err != nil {
		return nil // git keeps nothing of it
	}
	r.mu.Lock()
	delete(r.admins, path)
	r.mu.Unlock()
	return r.locked(ctx, func() error { return os.RemoveAll(admin) })
}

// RemoveWorktreesUnder removes every worktree of the repository whose folder is under root
// (registered, locked or half made, its folder there or not) except those keep names, and
// every other folder under root, then drops what git keeps of worktrees whose folders are
// gone. It returns the first error and goes on past it.
func (r *Repo) RemoveWorktreesUnder(ctx context.Context, root string, keep func(path string) bool) error {
	if keep == nil {
		keep = func(string) bool { return false }
	}
	var first error
	note := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	roots := []string{filepath.Clean(root)}
	if real, err := filepath.EvalSymlinks(root); err == nil && real != roots[0] {
		roots = append(roots, real)
	}
	under := func(p string) bool {
		for _, r := range roots {
			if strings.HasPrefix(p, r+string(filepath.Separator)) {
				return true
			}
		}
		return false
	}
	note(r.locked(ctx, func() error { r.repairAdmins(); return nil }))
	registered, err := r.Worktrees(ctx)
	note(err)
	for _, p := range registered {
		if under(p) && !keep(p) {
			note(r.RemoveWorktree(ctx, p))
		}
	}
	if entries, err := os.ReadDir(root); err == nil {
		for _, e := range entries {
			if p := filepath.Join(root, e.Name()); !keep(p) {
				note(r.RemoveWorktree(ctx, p))
			}
		}
	}
	note(r.Prune(ctx))
	return first
}

// DeleteRefsUnder deletes every ref under prefix (which ends with /), in one transaction.
func (r *Repo) DeleteRefsUnder(ctx context.Context, prefix string) error {
	out, err := r.git(ctx, r.Dir, nil, "for-each-ref", "--format=%(refname)", prefix)
	if err != nil {
		return err
	}
	var cmds strings.Builder
	for _, ref := range strings.Fields(out) {
		if strings.HasPrefix(ref, prefix) {
			fmt.Fprintf(&cmds, "delete %s\n", ref)
		}
	}
	if cmds.Len() == 0 {
		return nil
	}
	_, err = r.gitIn(ctx, r.Dir, nil, strings.NewReader(cmds.String()), "update-ref", "--stdin")
	return err
}

// locked runs fn holding the repository's worktree lock: an flock of a file in its git
// directory, and a mutex for this process's goroutines. Git does not guard its list of
// worktrees against itself: a remove of the last worktree deletes the folder that list lives in
// while another add is making its entry there.
func (r *Repo) locked(ctx context.Context, fn func() error) error {
	mu := repoLock(r.GitDir)
	mu.Lock()
	defer mu.Unlock()
	f, err := os.OpenFile(filepath.Join(r.GitDir, "crw-worktrees.lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("the repository's worktree lock: %w", err)
	}
	defer f.Close()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if err != syscall.EWOULDBLOCK {
			return fmt.Errorf("the repository's worktree lock: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return fn()
}

var (
	repoLocksMu sync.Mutex
	repoLocks   = map[string]*sync.Mutex{}
)

func repoLock(gitDir string) *sync.Mutex {
	repoLocksMu.Lock()
	defer repoLocksMu.Unlock()
	mu := repoLocks[gitDir]
	if mu == nil {
		mu = &sync.Mutex{}
		repoLocks[gitDir] = mu
	}
	return mu
}

// inWorktree runs git on the worktree at path through the admin folder the repository keeps
// for it, never through path/.git: that file is in the agent's reach, and one that points at
// another git directory would have crw's commands run that directory's config (its filters,
// its hooks) or move the user's HEAD.
func (r *Repo) inWorktree(ctx context.Context, path string, env []string, args ...string) (string, error) {
	if path == r.Dir {
		return r.git(ctx, path, env, args...)
	}
	admin, err := r.adminDir(path)
	if err != nil {
		return "", err
	}
	return r.git(ctx, path, env, append([]string{"--git-dir=" + admin, "--work-tree=" + path}, args...)...)
}

// adminDir finds the admin folder of the worktree at path: the one of GitDir/worktrees whose
// gitdir file names path/.git.
func (r *Repo) adminDir(path string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a, ok := r.admins[path]; ok {
		return a, nil
	}
	want := map[string]bool{filepath.Join(path, ".git"): true}
	if real, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		want[filepath.Join(real, filepath.Base(path), ".git")] = true
	}
	root := filepath.Join(r.GitDir, "worktrees")
	entries, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(root, e.Name(), "gitdir"))
		if err != nil || !want[strings.TrimSpace(string(data))] {
			continue
		}
		if r.admins == nil {
			r.admins = map[string]string{}
		}
		admin := filepath.Join(root, e.Name())
		r.admins[path] = admin
		return admin, nil
	}
	return "", fmt.Errorf("%s is no worktree of %s", path, r.Dir)
}

// Prune drops what git keeps of worktrees whose folders are gone.
func (r *Repo) Prune(ctx context.Context) error {
	return r.locked(ctx, func() error {
		_, err := r.git(ctx, r.Dir, nil, "worktree", "prune")
		return err
	})
}

// Head returns the commit a worktree's HEAD is at: read from its admin folder when it is
// detached (git writes it whole, by a rename), from git when it names a branch.
func (r *Repo) Head(ctx context.Context, path string) (string, error) {
	if path != r.Dir {
		if head := r.HeadOf(path); head != "" {
			return head, nil
		}
	}
	out, err := r.inWorktree(ctx, path, nil, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// SwapHead moves a worktree's own HEAD (detached) to value if it is at old.
func (r *Repo) SwapHead(ctx context.Context, path, value, old string) error {
	_, err := r.inWorktree(ctx, path, nil, "update-ref", "--no-deref", "-m", "crw", "HEAD", value, old)
	var ge *GitError
	if errors.As(err, &ge) && strings.Contains(ge.Stderr, "but expected") {
		return fmt.Errorf("HEAD of %s: %w", path, ErrRefMoved)
	}
	return err
}

// PendingTree stages everything in the worktree at path (new, changed and deleted files, as
// `git add -A` does) and returns the tree it makes. Git stages into a copy of the worktree's
// index, never into the index itself: a git killed with crw's process leaves no index.lock in
// the worktree for the next process of the run to trip on. With keepIndex the worktree's own
// index is left as it was, so a call working there sees nothing change; without, the copy
// replaces it once the tree is made (a rename: whole or not at all).
func (r *Repo) PendingTree(ctx context.Context, path string, keepIndex bool) (string, error) {
	admin, err := r.adminDir(path)
	if err != nil {
		if path != r.Dir {
			return "", err
		}
		admin = r.GitDir // the main worktree's index is the repository's
	}
	index := filepath.Join(admin, "index")
	mode := os.FileMode(0o644)
	tmp, err := os.CreateTemp(admin, "crw-index-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if data, err := os.ReadFile(index); err == nil {
		if err := os.WriteFile(tmp.Name(), data, 0o600); err != nil {
			return "", err
		}
		// The copy keeps the index's time: git trusts an entry whose file has not changed
		// size and second only when the entry is older than its index ("racy git"), and a
		// copy made now would make a file rewritten in the index's second look unchanged.
		if info, err := os.Stat(index); err == nil {
			mode = info.Mode().Perm()
			if err := os.Chtimes(tmp.Name(), info.ModTime(), info.ModTime()); err != nil {
				return "", err
			}
		}
	} else {
		os.Remove(tmp.Name()) // git makes it
	}
	env := []string{"GIT_INDEX_FILE=" + tmp.Name()}
	if _, err := r.inWorktree(ctx, path, env, "add", "--all", "--", "."); err != nil {
		return "", err
	}
	out, err := r.inWorktree(ctx, path, env, "write-tree")
	if err != nil {
		return "", err
	}
	if !keepIndex {
		if err := os.Chmod(tmp.Name(), mode); err != nil {
			return "", err
		}
		if err := os.Rename(tmp.Name(), index); err != nil {
			return "", err
		}
	}
	return strings.TrimSpace(out), nil
}

// TreeOf returns the tree of a commit.
func (r *Repo) TreeOf(ctx context.Context, commit string) (string, error) {
	out, err := r.git(ctx, r.Dir, nil, "rev-parse", "--verify", "--end-of-options", commit+"^{tree}")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// Has reports whether the repository holds an object.
func (r *Repo) Has(ctx context.Context, object string) bool {
	_, err := r.git(ctx, r.Dir, nil, "cat-file", "-e", "--end-of-options", object)
	return err == nil
}

// IsAncestor reports whether a is b or an ancestor of it.
func (r *Repo) IsAncestor(ctx context.Context, a, b string) bool {
	_, err := r.git(ctx, r.Dir, nil, "merge-base", "--is-ancestor", "--end-of-options", a, b)
	return err == nil
}

// Identity is who a commit is by; At is its author and committer time.
type Identity struct {
	Name, Email string
	At          time.Time
}

// Author is the identity the repository's config gives (user.name, user.email), or crw's.
func (r *Repo) Author(ctx context.Context) (name, email string) {
	name, email = "crw", "crw@localhost"
	if out, err := r.git(ctx, r.Dir, nil, "config", "user.name"); err == nil && strings.TrimSpace(out) != "" {
		name = strings.TrimSpace(out)
	}
	if out, err := r.git(ctx, r.Dir, nil, "config", "user.email"); err == nil && strings.TrimSpace(out) != "" {
		email = strings.TrimSpace(out)
	}
	return name, email
}

// CommitTree makes the commit of tree on parent. It is a function of its inputs alone (no
// clock, no config): made again from the same intent, it is the same object, so a commit whose
// result was never recorded is found again rather than made twice.
func (r *Repo) CommitTree(ctx context.Context, tree, parent, message string, who Identity) (string, error) {
	date := fmt.Sprintf("@%d +0000", who.At.Unix())
	env := []string{
		"GIT_AUTHOR_NAME=" + who.Name, "GIT_AUTHOR_EMAIL=" + who.Email, "GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=" + who.Name, "GIT_COMMITTER_EMAIL=" + who.Email, "GIT_COMMITTER_DATE=" + date,
	}
	args := []string{"-c", "commit.gpgSign=false", "commit-tree", tree}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	out, err := r.gitIn(ctx, r.Dir, env, strings.NewReader(message), args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// Status is a worktree's `git status --porcelain` with its HEAD, for digests.
func (r *Repo) Status(ctx context.Context, path string) (string, error) {
	head, err := r.Head(ctx, path)
	if err != nil {
		return "", err
	}
	out, err := r.inWorktree(ctx, path, nil, "status", "--porcelain=v1", "-z", "--untracked-files=all")
	if err != nil {
		return "", err
	}
	return head + "\n" + out, nil
}

// Worktrees lists the paths of the repository's worktrees, the main one first.
func (r *Repo) Worktrees(ctx context.Context) ([]string, error) {
	out, err := r.git(ctx, r.Dir, nil, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, line := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// Escape makes a node name one safe component of a ref and of a file name: letters, digits,
// '-' and '_' stay, every other byte is %XX, and a name longer than 120 escaped bytes is cut
// and given '+' and its hash, so two nodes share a component only if their hashes collide.
func Escape(node string) string {
	var b strings.Builder
	for i := 0; i < len(node); i++ {
		c := node[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	s := b.String()
	if s == "" {
		return "%"
	}
	if len(s) > maxComponent {
		// '+' is a byte escaping never keeps: no node's plain escape is a hashed one.
		sum := sha256.Sum256([]byte(node))
		s = s[:maxComponent-17] + "+" + hex.EncodeToString(sum[:8])
	}
	return s
}

// maxComponent keeps a ref's file name, and a worktree's, well under the 255 bytes of a
// file name.
const maxComponent = 120

// GitError is a git command that failed: its arguments and what it said.
type GitError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if len(msg) > 2000 {
		msg = msg[:2000] + "…"
	}
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *GitError) Unwrap() error { return e.Err }

func (r *Repo) git(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	return r.gitIn(ctx, dir, env, nil, args...)
}

func (r *Repo) gitIn(ctx context.Context, dir string, env []string, stdin *strings.Reader, args ...string) (string, error) {
	var in *strings.Reader
	if stdin != nil {
		in = stdin
	}
	return runIn(ctx, r.Git, dir, env, in, args...)
}

func run(ctx context.Context, git, dir string, env []string, args ...string) (string, error) {
	return runIn(ctx, git, dir, env, nil, args...)
}

// gitTimeout bounds one git command: a repository on a hung file system must not hang a run.
const gitTimeout = 10 * time.Minute

// maxOutput bounds what one git command may print back.
const maxOutput = 16 << 20

func runIn(ctx context.Context, git, dir string, env []string, stdin *strings.Reader, args ...string) (string, error) {
	if git == "" {
		git = "git"
	}
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	// Hooks run no code of the repository's in crw's worktrees, and no pager or prompt waits.
	full := append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}, args...)
	cmd := exec.CommandContext(ctx, git, full...)
	cmd.Dir = dir
	cmd.SysProcAttr = childAttr()
	cmd.Env = append(cleanEnv(), env...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stdout, stderr limited
	stdout.max, stderr.max = maxOutput, 64<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", &GitError{Args: args, Stderr: stderr.String(), Err: err}
	}
	if stdout.over {
		return "", &GitError{Args: args, Err: fmt.Errorf("printed more than %d bytes", maxOutput)}
	}
	return stdout.String(), nil
}

// cleanEnv is the process's environment without the variables that would point git at another
// repository, index or work tree than the one each command names.
func cleanEnv() []string {
	env := os.Environ()
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GIT_") && name != "GIT_CONFIG_NOSYSTEM" && name != "GIT_CONFIG_GLOBAL" {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
}

// limited is a buffer that keeps at most max bytes.
type limited struct {
	bytes.Buffer
	max  int
	over bool
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.max - l.Len(); len(p) > room {
		l.over = true
		if room > 0 {
			l.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return l.Buffer.Write(p)
}
