package placer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/workspace"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
)

// Refusal is a commit the worktrees' state refuses: recorded as an intent with the error and
// no result, so a replay, whose worktrees are as the run left them, gives the same.
type Refusal struct {
	Code   errs.Code
	Reason string
	Detail string
}

func refuse(code errs.Code, reason, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Intent is the commit intent of node's pending work with message: the tree of its worktree
// on the commit the worktree is to be at, for the node's ref; or why the worktrees refuse it.
func (p *Placer) Intent(node, message string) (*journal.Row, *Refusal) {
	ctx := context.WithoutCancel(p.cfg.Stop)
	repo, err := p.open(ctx)
	if err != nil {
		return nil, refuse(errs.CapabilityUnavailable, "worktree_failed", "%s", p.cfg.Logged(errs.New(errs.CapabilityUnavailable,
			"the repository cannot be opened").Wrap(err).Because("commit", "worktree_failed", errs.NotStarted, errs.Certain)))
	}
	n := p.node(node)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.Alloc == 0 {
		return nil, refuse(errs.InvalidRequest, "", "node %q has no worktree: no executor call of it has run", node)
	}
	for o := range n.open {
		return nil, refuse(errs.InvalidRequest, "", "node %q has executor call %s in flight: await it before committing its work", node, o.call.ID)
	}
	if n.NextAlloc > n.Alloc {
		return nil, refuse(errs.InvalidRequest, "", "node %q took a tier step: the work of its allocation %d is given up, and its next executor call builds anew; commit after that call", node, n.Alloc)
	}
	if why, cause := restore(ctx, n, repo, false); why != "" {
		if cause != nil {
			why = p.cfg.Logged(errs.New(errs.RevisionConflict, "%s", why).Wrap(cause).Because("commit", restoreReason(why), errs.NotStarted, errs.Certain))
		}
		return nil, refuse(errs.RevisionConflict, restoreReason(why), "%s", why)
	}
	tree, err := repo.PendingTree(ctx, n.Path, false)
	var head string
	if err == nil {
		head, err = repo.Head(ctx, n.Path)
	}
	if err != nil {
		return nil, refuse(errs.CapabilityUnavailable, "worktree_failed", "%s", p.cfg.Logged(errs.New(errs.CapabilityUnavailable,
			"node %q: its worktree cannot be read", node).Wrap(err).Because("commit", "worktree_failed", errs.NotStarted, errs.Certain)))
	}
	name, email := repo.Author(ctx)
	return journal.Commit{Node: node, Ref: NodeRef(p.cfg.Run, node), Alloc: n.Alloc, Tree: tree,
		Parent: n.At, Old: n.Ref, Head: head, Message: message, Author: name, Email: email, At: time.Now().UTC().Truncate(time.Second)}.Row(), nil
}

// thrown is an error thrown into the workflow for a failure whose cause is raw text (git's
// stderr, an I/O error): the cause goes to the run's log, and the error names its code, reason
// and log line instead.
func (p *Placer) thrown(code errs.Code, reason string, cause error, format string, args ...any) error {
	e := errs.New(code, format, args...).Wrap(cause).Because("commit", reason, errs.Stopped, errs.Certain)
	return errs.Throw(code, reason, "%s", p.cfg.Logged(e))
}

// ApplyRecorded makes a recorded intent's commit, whose process died before its result, and
// is its result. Under the node's lock it looks again: a placement of the node may have
// recorded that result since (finishDeadCommit), and an intent has one result.
func (p *Placer) ApplyRecorded(c *replay.Commit) (*journal.Row, error) {
	ctx := context.WithoutCancel(p.cfg.Stop)
	repo, err := p.open(ctx)
	if err != nil {
		return nil, p.thrown(errs.CapabilityUnavailable, "worktree_failed", err, "crw.commit: the repository cannot be opened")
	}
	n := p.node(c.Intent.Node)
	n.mu.Lock()
	defer n.mu.Unlock()
	if res := p.ResultOf(c); res != nil {
		return res, nil
	}
	res, err := p.commitRowsLocked(ctx, repo, n, c.Intent, true)
	if err != nil {
		return nil, err
	}
	p.SetResult(c, res)
	return res, nil
}

// CommitRows makes an intent's commit and records its result row, which it returns. Without
// move it only records what a dead process did: the result when the node's ref is at the
// intent's commit (the worktree's HEAD is moved there too), nothing (nil) when it is not.
func (p *Placer) CommitRows(intent *journal.Row, move bool) (*journal.Row, error) {
	ctx := context.WithoutCancel(p.cfg.Stop)
	repo, err := p.open(ctx)
	if err != nil {
		return nil, p.thrown(errs.CapabilityUnavailable, "worktree_failed", err, "crw.commit: the repository cannot be opened")
	}
	n := p.node(intent.Node)
	n.mu.Lock()
	defer n.mu.Unlock()
	return p.commitRowsLocked(ctx, repo, n, intent, move)
}

// commitRowsLocked is CommitRows with the repository open and the node's lock held.
func (p *Placer) commitRowsLocked(ctx context.Context, repo *workspace.Repo, n *nodeState, intent *journal.Row, move bool) (*journal.Row, error) {
	record := func(res *journal.Row) (*journal.Row, error) {
		p.cfg.Journal.Append(res)
		p.cfg.Flush()
		return res, nil
	}
	commit, err := repo.CommitTree(ctx, intent.Tree, intent.Parent, commitMessage(intent.Message),
		workspace.Identity{Name: intent.Author, Email: intent.Email, At: intent.At})
	if err != nil {
		return nil, p.thrown(errs.CapabilityUnavailable, "worktree_failed", err, "crw.commit: node %q: git could not make its commit", intent.Node)
	}
	if !move {
		if cur, err := repo.Ref(ctx, intent.Ref); err != nil || cur != commit {
			return nil, nil
		}
	} else if err := repo.SwapRef(ctx, intent.Ref, commit, intent.Old); err != nil {
		cur, _ := repo.Ref(ctx, intent.Ref)
		if cur != commit {
			if errors.Is(err, workspace.ErrRefMoved) {
				return record(journal.CommitResult{Node: intent.Node, Ref: intent.Ref, Reason: "revision_conflict",
					Detail: fmt.Sprintf("%s is at %s, not at %s as the run recorded: it moved under the run, and is left as it is",
						intent.Ref, orNone(cur), orNone(intent.Old))}.Row())
			}
			return nil, p.thrown(errs.CapabilityUnavailable, "worktree_failed", err, "crw.commit: node %q: git could not move its ref", intent.Node)
		}
	}
	if intent.Alloc == n.Alloc && n.Path != "" {
		// The worktree goes to the commit it holds the tree of. One that is gone is made
		// again there by the next call's restore.
		if cur, err := repo.Head(ctx, n.Path); err == nil && cur != commit {
			if err := repo.SwapHead(ctx, n.Path, commit, intent.Head); err != nil {
				p.cfg.Journal.Append(journal.Warning{Reason: "worktree_head_moved", Detail: fmt.Sprintf("node %q: the HEAD of %s moved while it was committed: %v", intent.Node, n.Path, err)}.Row())
			}
		}
		n.At, n.Tree = commit, intent.Tree
	}
	n.Ref = commit
	return record(journal.CommitResult{Node: intent.Node, Commit: commit, Tree: intent.Tree, Parent: intent.Parent, Ref: intent.Ref}.Row())
}

// finishDeadCommit records what git did for the node's commit intent whose process died before
// its result, when git moved the node's ref to that commit: the ref then moved under the
// journal, not under the run. A resume that reruns a held call places it before the script
// reaches the commit (a paused process made the commit after the held row). It reports whether
// the node's ref is now the run's again. The node's lock is held.
func (p *Placer) finishDeadCommit(ctx context.Context, repo *workspace.Repo, n *nodeState) bool {
	h := p.cfg.History
	if h == nil {
		return false
	}
	p.resultsMu.Lock()
	c := h.UnfinishedCommit() // its Result is read under resultsMu, as SetResult writes it
	p.resultsMu.Unlock()
	if c == nil || c.Intent.Node != n.Name || c.Intent.Old != n.Ref {
		return false
	}
	res, err := p.commitRowsLocked(ctx, repo, n, c.Intent, false)
	if err != nil || res == nil {
		return false
	}
	p.SetResult(c, res)
	return true
}

// ResultOf is a recorded commit's result, which a placement may record for a dead process
// (finishDeadCommit) while the script's loop reads it.
func (p *Placer) ResultOf(c *replay.Commit) *journal.Row {
	p.resultsMu.Lock()
	defer p.resultsMu.Unlock()
	return c.Result
}

// SetResult records a recorded commit's result.
func (p *Placer) SetResult(c *replay.Commit, res *journal.Row) {
	p.resultsMu.Lock()
	c.Result = res
	p.resultsMu.Unlock()
}

// commitMessage ends a message with one newline, as git commit does.
func commitMessage(m string) string {
	for len(m) > 0 && m[len(m)-1] == '\n' {
		m = m[:len(m)-1]
	}
	return m + "\n"
}

// MarkWorked says an executor call worked in the node's worktree since the commits of it the
// journal recorded: they are made again, not given as recorded.
func (p *Placer) MarkWorked(node string) {
	n := p.node(node)
	n.mu.Lock()
	n.worked = true
	n.mu.Unlock()
}

// Worked tells whether an executor call of this process worked in the node's worktree.
func (p *Placer) Worked(node string) bool {
	n := p.node(node)
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.worked
}

// StepTier moves the node to tier: its next executor call builds in a new allocation, which
// it returns.
func (p *Placer) StepTier(node string, tier int) (alloc int) {
	n := p.node(node)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.Tier, n.NextAlloc = tier, n.Alloc+1
	return n.NextAlloc
}
