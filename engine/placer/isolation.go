package placer

import (
	"context"
	"fmt"
	"strings"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/workspace"
	"github.com/crw-dev/crw/journal"
)

// isolation is what --trace-isolation took when a call's turns started: digests of its
// directory, of the run's repository's own checkout, and of the refs under refs/crw/ that are
// not the run's.
type isolation struct {
	p, outside, shared string
	outsideDir         string // the checkout outside is of
}

// TraceIsolation takes the call's isolation digests as its turns start: Leave compares them
// with the call's end's, and warns of what changed.
func (p *Placer) TraceIsolation(pl *Placement) {
	pl.isolation = p.digests(pl)
}

// digests takes a call's isolation digests ("" for what cannot be read).
func (p *Placer) digests(pl *Placement) *isolation {
	ctx := context.WithoutCancel(p.cfg.Stop)
	repo, err := p.open(ctx)
	if err != nil {
		return nil
	}
	d := &isolation{outsideDir: repo.Dir}
	iso, isolated := p.cfg.Backend.(backend.Isolated)
	if isolated {
		// A session run's owner works from a checkout of its own (seed 003).
		if dir := iso.OutsideCheckout(ctx, pl.Row.Workspace); dir != "" {
			d.outsideDir = dir
		}
	}
	d.p, _ = repo.Status(ctx, pl.Row.Workspace)
	if d.outsideDir == repo.Dir {
		d.outside, _ = repo.Status(ctx, d.outsideDir)
	} else if other, err := workspace.Open(ctx, d.outsideDir); err == nil {
		d.outside, _ = other.Status(ctx, other.Dir)
	}
	if isolated {
		d.shared = iso.SharedDigest() + "\n"
	}
	if refs, err := repo.Refs(ctx, "refs/crw/"); err == nil {
		own := RunRefs(p.cfg.Run)
		var kept []string
		for _, line := range strings.Split(refs, "\n") {
			if line != "" && !strings.HasPrefix(line, own) {
				kept = append(kept, line)
			}
		}
		d.shared += strings.Join(kept, "\n")
	}
	return d
}

// isolationWarnings compares a call's digests from when its turns started with now's, and
// writes the warnings the differences are.
func (p *Placer) isolationWarnings(pl *Placement) {
	before := pl.isolation
	if before == nil {
		return
	}
	after := p.digests(pl)
	if after == nil {
		return
	}
	c := pl.call
	warn := func(reason, detail string) {
		p.cfg.Journal.Append(journal.Warning{Call: c.ID, Reason: reason, Detail: detail}.Row())
	}
	writes := replay.Writes(c.Role)
	if !writes && after.p != before.p {
		warn("read_role_wrote", fmt.Sprintf("a %s call changed its directory %s (git status and HEAD differ)", c.Role, pl.Row.Workspace))
	}
	if writes && after.outside != before.outside {
		warn("executor_wrote_outside", fmt.Sprintf("the checkout %s changed while the executor worked in %s", before.outsideDir, pl.Row.Workspace))
	}
	if after.shared != before.shared {
		warn("shared_state_changed", "state other runs share (refs under refs/crw/ that are not this run's, owner bindings) changed while the call ran")
	}
}
