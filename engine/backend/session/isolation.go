package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/session/host"
)

// OutsideCheckout implements backend.Isolated: the owner's working directory's checkout when it
// is a git checkout other than p (seed 003); "" otherwise, and the run's repository counts.
func (b *Backend) OutsideCheckout(ctx context.Context, p string) string {
	top := b.ownerCheckout(ctx)
	if top == "" || top == toplevel(ctx, p) {
		return ""
	}
	return top
}

// ownerCheckout is the top of the owner's working directory's checkout ("" when it is none or
// cannot be read), read once: the owner thread does not move.
func (b *Backend) ownerCheckout(ctx context.Context) string {
	b.ownerTop.Do(func() {
		r, ok := b.cfg.Host.(host.CwdReader)
		if !ok {
			return
		}
		cwd, err := r.ThreadCwd(ctx, b.cfg.Owner)
		if err != nil || !filepath.IsAbs(cwd) {
			return
		}
		b.ownerTopDir = toplevel(ctx, cwd)
	})
	return b.ownerTopDir
}

// toplevel is the top of the git checkout dir is in, "" when it is in none.
func toplevel(ctx context.Context, dir string) string {
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--show-toplevel")
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return filepath.Clean(strings.TrimSpace(string(out)))
}

// SharedDigest implements backend.Isolated: the owner bindings of every thread (the
// <thread>.jsonl files of the flow-bound folder, not the spawn hook's ledger), by name, size
// and modification time.
func (b *Backend) SharedDigest() string {
	if b.cfg.Bindings == "" {
		return ""
	}
	files, _ := filepath.Glob(filepath.Join(b.cfg.Bindings, "*.jsonl"))
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		if fi, err := os.Lstat(f); err == nil && fi.Mode().IsRegular() {
			fmt.Fprintf(h, "%s %d %d\n", filepath.Base(f), fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return "bindings " + hex.EncodeToString(h.Sum(nil))
}

var _ backend.Isolated = (*Backend)(nil)
