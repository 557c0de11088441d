package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"syscall"

	"github.com/crw-dev/crw/engine/workspace"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store"
)

// ClonesDir is the folder of the state folder where a host keeps its clones of runs'
// repositories (store.Spec.RepoURL), one per URL.
const ClonesDir = "clones"

// repositoryHere is the folder a process on this host runs spec's run in: its repository where
// the spec says, when this host has it there (a checkout's top level holding the run's head
// commit); else, for a run with a clone URL, this host's clone of the URL, made when missing.
// A run with a clone URL has its refs fetched from it first, where every process of the run
// moves them before it moves them here.
func (s *Service) repositoryHere(ctx context.Context, spec *store.Spec) (string, error) {
	if spec.Repo == "" || spec.RepoURL == "" {
		return spec.Repo, nil
	}
	repo, err := workspace.Open(ctx, spec.Repo)
	if err != nil || repo.Dir != spec.Repo || !repo.Has(ctx, spec.HeadCommit+"^{commit}") {
		if repo, err = s.clone(ctx, spec.RepoURL); err != nil {
			return "", errs.New(errs.CapabilityUnavailable, "run %s: its repository %s is not on this host, and its clone URL %s cannot be cloned", spec.Run, spec.Repo, spec.RepoURL).Wrap(err).
				Because("start", "repository_unreachable", errs.NotStarted, errs.Certain).Next("give this host the repository at " + spec.Repo + ", or git access to " + spec.RepoURL)
		}
	}
	refs := workspace.RunRefs(spec.Run)
	if err := repo.Fetch(ctx, spec.RepoURL, "+"+refs+"*:"+refs+"*"); err != nil {
		return "", errs.New(errs.CapabilityUnavailable, "run %s: its refs cannot be fetched from %s", spec.Run, spec.RepoURL).Wrap(err).
			Because("start", "repository_unreachable", errs.NotStarted, errs.Certain).Next("crw flow resume " + spec.Run + " once " + spec.RepoURL + " can be reached")
	}
	if !repo.Has(ctx, spec.HeadCommit+"^{commit}") {
		return "", errs.New(errs.CapabilityUnavailable, "run %s: its head commit %s is neither in %s nor at %s", spec.Run, spec.HeadCommit, repo.Dir, spec.RepoURL).
			Because("start", "repository_unreachable", errs.NotStarted, errs.Certain)
	}
	return repo.Dir, nil
}

// clone is this host's clone of url, under the state folder, made once by one process at a
// time.
func (s *Service) clone(ctx context.Context, url string) (*workspace.Repo, error) {
	if s.StateDir == "" {
		return nil, errs.New(errs.CapabilityUnavailable, "this process has no state folder to clone into")
	}
	sum := sha256.Sum256([]byte(url))
	dir := filepath.Join(s.StateDir, ClonesDir, hex.EncodeToString(sum[:12]))
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(dir+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, err
	}
	return workspace.Clone(ctx, url, dir)
}
