package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A checkout a call was given and left as it found it can serve the next call: a fresh one
// costs a whole `git worktree add` (and its removal), the size of the tree, where a reused one
// costs git's look at what changed. The functions here decide whether one is as it was made
// (Pristine) and move it to another commit (Switch); engine/runner keeps the ones that are idle.

// pristineIndex is the copy of a checkout's index that Switch (and MarkPristine) keep in its
// admin folder, as git left it after the checkout: Pristine puts it back before it looks, so
// what a call did to the index (staged files, assume-unchanged or skip-worktree bits that
// would hide a change from git status) is undone, and a file the call changed no longer
// matches the stat data git kept of it.
const pristineIndex = "crw-pristine-index"

// Seal is what crw holds, in its own memory, of a checkout's admin folder as it was made: a
// digest of the index it kept and of the settings git gave the checkout (config.worktree, info/:
// a sparse checkout's). The folder is in a call's reach (its .git names it); the seal is not, so
// a call that rewrote the kept index to hide a change is found out. A checkout crw has no seal
// of (one a killed process left) is not handed on.
type Seal string

// MarkPristine keeps a copy of the checkout's index as it is now, right after it was made or
// moved, and returns its seal: Pristine compares the checkout against both later.
func (r *Repo) MarkPristine(path string) (Seal, error) {
	admin, err := r.adminDir(path)
	if err != nil {
		return "", err
	}
	if err := copyKeepingTime(filepath.Join(admin, "index"), filepath.Join(admin, pristineIndex)); err != nil {
		return "", err
	}
	return sealOf(admin)
}

// sealOf digests what a seal covers in an admin folder.
func sealOf(admin string) (Seal, error) {
	h := sha256.New()
	for _, name := range []string{pristineIndex, "config.worktree", "info"} {
		err := filepath.WalkDir(filepath.Join(admin, name), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) && p == filepath.Join(admin, name) {
					fmt.Fprintf(h, "%s: none\n", name)
					return nil
				}
				return err
			}
			if d.IsDir() {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s %d\n", p[len(admin):], len(data))
			h.Write(data)
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	return Seal(hex.EncodeToString(h.Sum(nil))), nil
}

// Pristine reports whether the checkout at path is exactly as it was made at commit head:
// its admin folder is as seal has it, its .git file names that folder, its HEAD is head, its
// index is the one kept when it was made, and git finds no file that differs from head's tree, none that head does not
// have (ignored ones included) and no empty folder. When it is not, why says what differs;
// err is a checkout git could not read at all.
func (r *Repo) Pristine(ctx context.Context, path, head string, seal Seal) (why string, err error) {
	admin, err := r.adminDir(path)
	if err != nil {
		return "", err
	}
	if seal == "" {
		return "crw holds no seal of it (an earlier process made it)", nil
	}
	if got, err := sealOf(admin); err != nil || got != seal {
		return "the index crw kept of it, or its config.worktree or info/, changed", nil
	}
	if why := r.gitFileIsOwn(path, admin); why != "" {
		return why, nil
	}
	data, err := os.ReadFile(filepath.Join(admin, "HEAD"))
	if err != nil {
		return "", err
	}
	if got := strings.TrimSpace(string(data)); got != head {
		return fmt.Sprintf("its HEAD is %s, not %s", got, head), nil
	}
	if err := copyKeepingTime(filepath.Join(admin, pristineIndex), filepath.Join(admin, "index")); err != nil {
		return "", err
	}
	if why := ownState(admin); why != "" {
		return why, nil
	}
	// What git does not look at, walked beside git's own look: a file that is a hard link (a
	// write to it would land elsewhere too), a .git below the top (a submodule made, or a
	// repository), a folder that cannot be read.
	walked := make(chan string, 1)
	go func() { walked <- oddEntries(path) }()
	changed, err := r.inWorktree(ctx, path, nil, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching")
	odd := <-walked
	if err != nil {
		return "", err
	}
	if changed != "" {
		return "git status lists " + firstEntry(changed), nil
	}
	if odd != "" {
		return odd, nil
	}
	// git status lists no folder that holds no file; git clean does.
	extra, err := r.inWorktree(ctx, path, nil, "clean", "-n", "-d", "-x")
	if err != nil {
		return "", err
	}
	if extra != "" {
		return "git clean lists " + firstEntry(extra), nil
	}
	return "", nil
}

// adminEntries are what git and crw keep in a checkout's admin folder; anything else there is
// state a call left for the next one (refs/worktree, refs/bisect, config.worktree).
var adminEntries = map[string]bool{"HEAD": true, "ORIG_HEAD": true, "commondir": true, "gitdir": true, "index": true,
	"logs": true, pristineIndex: true, "config.worktree": true, "info": true} // the last two under the seal

// ownState says what a call left in the checkout's admin folder, "" when nothing.
func ownState(admin string) string {
	entries, err := os.ReadDir(admin)
	if err != nil {
		return "its admin folder cannot be read"
	}
	for _, e := range entries {
		if !adminEntries[e.Name()] {
			return fmt.Sprintf("its admin folder %s holds %s", admin, e.Name())
		}
	}
	return ""
}

// oddEntries walks a checkout for what git status does not report: a regular file with more
// than one link, a FIFO, socket or device, a .git below the top, an entry that cannot be read.
// "" when there is none.
func oddEntries(top string) string {
	var odd string
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			odd = fmt.Sprintf("%s cannot be read", p)
			return filepath.SkipAll
		}
		if d.Name() == ".git" {
			if p == filepath.Join(top, ".git") {
				return nil // its own, checked apart
			}
			odd = fmt.Sprintf("it holds %s: a submodule or a repository was made", p)
			return filepath.SkipAll
		}
		if t := d.Type(); !t.IsRegular() && !t.IsDir() && t&fs.ModeSymlink == 0 {
			// A FIFO, a socket, a device: git neither tracks nor reports it, and a reader of
			// the folder could block on it.
			odd = fmt.Sprintf("it holds %s, which is no file, folder or link (%s)", p, t)
			return filepath.SkipAll
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				odd = fmt.Sprintf("%s cannot be read", p)
				return filepath.SkipAll
			}
			if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
				odd = fmt.Sprintf("%s is a hard link: a write to it lands in another file too", p)
				return filepath.SkipAll
			}
		}
		return nil
	})
	if err != nil && odd == "" {
		odd = fmt.Sprintf("it cannot be walked: %v", err)
	}
	return odd
}

// gitFileIsOwn says what is wrong with the checkout's .git file, "" when it names admin: one
// that points anywhere else would send the next call's git to another repository.
func (r *Repo) gitFileIsOwn(path, admin string) string {
	gitFile := filepath.Join(path, ".git")
	st, err := os.Lstat(gitFile)
	if err != nil || !st.Mode().IsRegular() {
		return "its .git is not the file git made"
	}
	data, err := os.ReadFile(gitFile)
	if err != nil {
		return "its .git cannot be read"
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !ok || strings.ContainsAny(target, "\n") {
		return "its .git is not the file git made"
	}
	a, errA := os.Stat(target)
	b, errB := os.Stat(admin)
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		return fmt.Sprintf("its .git names %s, not its own %s", target, admin)
	}
	return ""
}

// firstEntry is the first of the entries git printed, to say what differs.
func firstEntry(out string) string {
	first, _, _ := strings.Cut(strings.TrimLeft(out, "\x00\n"), "\x00")
	first, _, _ = strings.Cut(first, "\n")
	if len(first) > 300 {
		first = first[:300] + "…"
	}
	return fmt.Sprintf("%q", first)
}

// Switch moves a pristine checkout at path from commit from to commit to: its HEAD, its index
// and those of its files that differ (git reset --hard on a clean checkout rewrites no other),
// and returns its new seal ("" when from is to: nothing moved, the seal stands).
// The checkout is locked as being made while it switches: one a killed process left half
// switched is HalfMade, never handed to a call. A checkout Switch fails on is to be removed.
func (r *Repo) Switch(ctx context.Context, path, from, to string) (Seal, error) {
	if from == to {
		return "", nil
	}
	if !isObjectID(to) {
		// git reset takes no --end-of-options (git 2.39): only an object id reaches it.
		return "", fmt.Errorf("%q is no commit id", to)
	}
	admin, err := r.adminDir(path)
	if err != nil {
		return "", err
	}
	locked := filepath.Join(admin, "locked")
	if err := os.WriteFile(locked, []byte(MakingReason), 0o600); err != nil {
		return "", err
	}
	// No reflog: a checkout moved for call after call would keep every commit it held.
	if _, err := r.inWorktree(ctx, path, nil, "-c", "core.logAllRefUpdates=false", "reset", "--quiet", "--hard", to); err != nil {
		return "", err
	}
	seal, err := r.MarkPristine(path)
	if err != nil {
		return "", err
	}
	return seal, os.Remove(locked)
}

// HeadOf reads the commit a detached worktree's HEAD holds from its admin folder, without
// git; "" when the HEAD is not a plain object id (a branch, or nothing).
func (r *Repo) HeadOf(path string) string {
	admin, err := r.adminDir(path)
	if err != nil {
		return ""
	}
	data, err := os.ReadFile(filepath.Join(admin, "HEAD"))
	if err != nil {
		return ""
	}
	head := strings.TrimSpace(string(data))
	if !isObjectID(head) {
		return ""
	}
	return head
}

// isObjectID reports whether s is a full SHA-1 or SHA-256 object id in lower-case hex.
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// copyKeepingTime copies a file, keeping its mode and time: git trusts an index entry whose
// file has not changed size and second only when the entry is older than its index ("racy
// git"), so a copy stamped now would make a file rewritten in the index's second look
// unchanged. A copy a killed process cut short is an index git refuses: the checkout is then
// removed, never handed on.
func copyKeepingTime(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, data, info.Mode().Perm()); err != nil {
		return err
	}
	return os.Chtimes(dst, info.ModTime(), info.ModTime())
}
