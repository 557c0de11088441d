package worker

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/crw-dev/crw/engine/backend/appserver"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/workspace"
	"github.com/crw-dev/crw/store"
)

// Offers are what a worker's host offers the runs it takes: codex (an app-server run needs
// it), and repositories (a run in a repository needs that repository, at its path, with the
// commit its calls start from). A run that needs what its worker does not offer, or what its
// host lacks, is left for another worker.
type Offers struct {
	Codex bool
	// AnyRepo: every repository on this host, as a run names it; else Repos, by top level.
	AnyRepo bool
	Repos   []string
	// Clone: the repository of a run that has a clone URL, cloned into the state folder when
	// this host does not have it where the run names it.
	Clone bool
}

// AutoOffers offer codex, every repository and clones, each checked on the host for the run
// that needs it: what a worker offers unless --offers says.
var AutoOffers = Offers{Codex: true, AnyRepo: true, Clone: true}

// ParseOffers reads --offers: a list of codex, repo:PATH (a repository by its top level),
// repo:* (every repository), clone (a run's repository cloned from its clone URL) and auto
// (codex, repo:* and clone). An empty list offers nothing a run may need: such a worker takes
// runs without a repository on the fake backend.
func ParseOffers(items []string) (Offers, error) {
	var o Offers
	for _, item := range items {
		switch path, isRepo := strings.CutPrefix(item, "repo:"); {
		case item == "auto":
			o.Codex, o.AnyRepo, o.Clone = true, true, true
		case item == "codex":
			o.Codex = true
		case item == "clone":
			o.Clone = true
		case isRepo && path == "*":
			o.AnyRepo = true
		case isRepo && filepath.IsAbs(path):
			o.Repos = append(o.Repos, filepath.Clean(path))
		case isRepo:
			return o, fmt.Errorf("--offers: %q: a repository is named by the absolute path of its top level (repo:/src/app), or repo:*", item)
		default:
			return o, fmt.Errorf("--offers: %q is not an offer: codex, repo:PATH, repo:*, clone or auto", item)
		}
	}
	return o, nil
}

// String is the offers as --offers reads them.
func (o Offers) String() string {
	var items []string
	if o.Codex {
		items = append(items, "codex")
	}
	if o.AnyRepo {
		items = append(items, "repo:*")
	}
	for _, r := range o.Repos {
		items = append(items, "repo:"+r)
	}
	if o.Clone {
		items = append(items, "clone")
	}
	if len(items) == 0 {
		return "nothing (runs without a repository, on the fake backend)"
	}
	return strings.Join(items, ",")
}

// Serves tells why this host cannot serve the run of spec ("" when it can): the run needs codex
// (an app-server run) and the worker does not offer it or the host has no codex binary; or it
// works in a repository the worker does not offer, or which this host does not have at that
// path with the commit its calls start from, unless the run has a clone URL and the worker
// offers clones (the run's process clones it).
func (o Offers) Serves(ctx context.Context, spec *store.Spec) string {
	if spec.Backend == appserver.Name {
		if !o.Codex {
			return "the run needs codex (the app-server backend), which this worker does not offer (--offers " + o.String() + ")"
		}
		if _, err := codex.FindCodex(spec.BackendOptions["codex"]); err != nil {
			return "the run needs codex (the app-server backend), and this host has none: " + err.Error()
		}
	}
	if spec.Repo != "" {
		why := o.hasRepo(ctx, spec)
		if why != "" && spec.RepoURL != "" && o.Clone {
			return "" // the run's process clones it (engine: Service.repositoryHere)
		}
		if why != "" && spec.RepoURL != "" {
			why += ", and it does not offer clones of its clone URL " + spec.RepoURL
		}
		return why
	}
	return ""
}

// hasRepo tells why this host cannot serve the repository of spec's run at its path ("" when
// it can).
func (o Offers) hasRepo(ctx context.Context, spec *store.Spec) string {
	if !o.AnyRepo && !slices.Contains(o.Repos, spec.Repo) {
		return "the run works in the repository " + spec.Repo + ", which this worker does not offer (--offers " + o.String() + ")"
	}
	check, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	repo, err := workspace.Open(check, spec.Repo)
	switch {
	case err != nil:
		return fmt.Sprintf("the run works in the repository %s, which this host does not have: %v", spec.Repo, err)
	case repo.Dir != spec.Repo:
		return fmt.Sprintf("the run works in the repository %s, which is no checkout's top level on this host (it is in %s)", spec.Repo, repo.Dir)
	case !repo.Has(check, spec.HeadCommit+"^{commit}"):
		return fmt.Sprintf("the run works in the repository %s at commit %s, which this host does not have", spec.Repo, spec.HeadCommit)
	}
	return ""
}
