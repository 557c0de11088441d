package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/workspace"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// CommitResult is what crw.commit resolves to.
type CommitResult struct {
	Node    string `json:"node"`
	Commit  string `json:"commit"`
	Tree    string `json:"tree"`
	Parent  string `json:"parent"`
	Ref     string `json:"ref"`
	Message string `json:"message"`
}

// Commit implements crw.Host: the pending tree of the node's worktree committed on the commit
// the worktree is to be at, and put on the node's ref by compare-and-swap against the value
// the run gave it. The intent is durable before git is touched and the result is recorded
// after; a replay gives the recorded result and commits nothing, and an intent whose result
// was not recorded is finished from the intent alone (its commit is the same object again).
func (r *runner) Commit(node, message string) (json.RawMessage, error) {
	// What the script's order alone decides is thrown without a record: a replay decides it
	// the same way at the same place.
	if err := context.Cause(r.ctx); err != nil {
		return nil, r.loggedThrow(errs.RunUnavailable, "run_stopping", err, "crw.commit: the run is stopping")
	}
	if r.dryRun {
		// A rehearsal commits nothing: the stand-in says so in place of each hash.
		return json.Marshal(CommitResult{Node: node, Commit: "dry-run", Tree: "dry-run", Parent: "dry-run", Ref: NodeRef(r.id, node), Message: message})
	}
	if !r.ws.has() {
		return nil, errs.Throw(errs.InvalidRequest, "", "crw.commit: the run has no repository: start it in a git checkout or with --repo DIR")
	}
	if told := r.toldHolds[node]; len(told) > 0 {
		return nil, errs.Throw(errs.UnreconciledEffect, "recovery_hold", "crw.commit: node %q is in recovery_hold: call %s has an unknown outcome (crw flow recover %s %s)", node, told[0], r.id, told[0])
	}
	if err := r.seedSuperseded(); err != nil {
		return nil, err
	}
	k := r.commits
	r.commits++
	if r.h != nil && k < len(r.h.Commits) {
		if at, left := r.replay.LeftAt(); left && r.h.SupersededBy(r.h.Commits[k].Intent.Seq, at) {
			// The process that recorded this commit and every later one had the result of
			// a call a pause held; this one has the rerun's: they are made again.
			r.superseded = r.h.Commits[k:]
			k, r.commits = len(r.h.Commits), len(r.h.Commits)+1
			if err := r.finishSuperseded(); err != nil {
				return nil, err
			}
		}
	}
	if r.h != nil && k < len(r.h.Commits) {
		rec := r.h.Commits[k]
		if rec.Intent.Node != node || rec.Intent.Message != message {
			d := fmt.Errorf("crw.commit #%d: the script commits node %q with message %q; the journal's commit #%d is of node %q with message %q",
				k+1, node, clip(message), k+1, rec.Intent.Node, clip(rec.Intent.Message))
			r.stop(errs.New(errs.RevisionConflict, "run %s: %v", r.id, d).
				Because("replay", "divergence", "stopped", errs.Certain).
				Next("resume it with the script it was recorded with; crw flow shadow shows what changed"))
			return nil, errs.Throw(errs.RevisionConflict, "divergence", "%v", d)
		}
		if res := r.resultOf(rec); rec.Intent.Status != "" || res != nil {
			return CommitOutcome(rec.Intent, res)
		}
		return r.applyRecorded(rec)
	}
	if out, kept, err := r.keepSuperseded(node, message); kept {
		return out, err
	}
	// What the worktrees' state decides is recorded, refusals too (an intent with the error
	// and no result): a replay, whose worktrees are as the run left them, gives the same.
	refuse := func(code errs.Code, reason, format string, args ...any) (json.RawMessage, error) {
		row := &journal.Row{Type: journal.TypeCommitIntent, Node: node, Message: message, Status: string(code), Reason: reason,
			Detail: "crw.commit: " + fmt.Sprintf(format, args...)}
		r.j.Append(row)
		r.flushSoon()
		return CommitOutcome(row, nil)
	}
	ctx := context.WithoutCancel(r.ctx)
	repo, err := r.ws.open(ctx)
	if err != nil {
		return refuse(errs.CapabilityUnavailable, "worktree_failed", "%s", r.logged(errs.New(errs.CapabilityUnavailable,
			"the repository cannot be opened").Wrap(err).Because("commit", "worktree_failed", errs.NotStarted, errs.Certain)))
	}
	n := r.ws.node(node)
	n.mu.Lock()
	if n.Alloc == 0 {
		n.mu.Unlock()
		return refuse(errs.InvalidRequest, "", "node %q has no worktree: no executor call of it has run", node)
	}
	for o := range n.open {
		n.mu.Unlock()
		return refuse(errs.InvalidRequest, "", "node %q has executor call %s in flight: await it before committing its work", node, o.id)
	}
	if n.NextAlloc > n.Alloc {
		n.mu.Unlock()
		return refuse(errs.InvalidRequest, "", "node %q took a tier step: the work of its allocation %d is given up, and its next executor call builds anew; commit after that call", node, n.Alloc)
	}
	if why, cause := r.restore(ctx, n, repo, false); why != "" {
		n.mu.Unlock()
		if cause != nil {
			why = r.logged(errs.New(errs.RevisionConflict, "%s", why).Wrap(cause).Because("commit", restoreReason(why), errs.NotStarted, errs.Certain))
		}
		return refuse(errs.RevisionConflict, restoreReason(why), "%s", why)
	}
	tree, err := repo.PendingTree(ctx, n.Path, false)
	var head string
	if err == nil {
		head, err = repo.Head(ctx, n.Path)
	}
	if err != nil {
		n.mu.Unlock()
		return refuse(errs.CapabilityUnavailable, "worktree_failed", "%s", r.logged(errs.New(errs.CapabilityUnavailable,
			"node %q: its worktree cannot be read", node).Wrap(err).Because("commit", "worktree_failed", errs.NotStarted, errs.Certain)))
	}
	name, email := repo.Author(ctx)
	intent := &journal.Row{Type: journal.TypeCommitIntent, Node: node, Ref: NodeRef(r.id, node), Alloc: n.Alloc, Tree: tree,
		Parent: n.At, Old: n.Ref, Head: head, Message: message, Author: name, Email: email, At: time.Now().UTC().Truncate(time.Second)}
	n.mu.Unlock()
	if res := r.adopt(intent); res != nil {
		r.j.Append(intent, res)
		r.flushSoon()
		return CommitOutcome(intent, res)
	}
	return r.intendAndApply(intent)
}

// intendAndApply makes the intent durable before git is touched, then makes its commit.
func (r *runner) intendAndApply(intent *journal.Row) (json.RawMessage, error) {
	seq := r.j.Append(intent)
	if err := r.j.Sync(seq); err != nil {
		r.stop(err)
		return nil, r.loggedThrow(errs.RunUnavailable, "run_stopping", err, "crw.commit: the journal could not be written")
	}
	return r.applyCommit(intent)
}

// loggedThrow is an error thrown into the workflow for a failure whose cause is raw text (git's
// stderr, an I/O error): the cause goes to the run's log, and the error names its code, reason
// and log line instead.
func (r *runner) loggedThrow(code errs.Code, reason string, cause error, format string, args ...any) error {
	e := errs.New(code, format, args...).Wrap(cause).Because("commit", reason, errs.Stopped, errs.Certain)
	return errs.Throw(code, reason, "%s", r.logged(e))
}

// logged writes e's full account to the run's log and is e's detail naming that line.
func (r *runner) logged(e *errs.Error) string {
	if l := r.scriptLog.log; l != nil {
		store.LogError(l, e) // crw's own lines are few and small: they are kept past the bound
	}
	if e.Diagnostic.Log == "" {
		return fmt.Sprintf("%s (%s, %s; this process has no log to keep its account)", e.Detail, e.Code, e.Reason())
	}
	return fmt.Sprintf("%s (%s, %s; its account is in %s, on the line with correlationId %s)",
		e.Detail, e.Code, e.Reason(), e.Diagnostic.Log, e.Diagnostic.CorrelationID)
}

// seedSuperseded takes, at this process's first commit, the commits an earlier process's rerun
// superseded (History.Superseded) and did not give again before it died: the pool keepSuperseded
// and adopt draw from, as they would have in that process.
func (r *runner) seedSuperseded() error {
	if r.supersededSeeded || r.h == nil {
		return nil
	}
	r.supersededSeeded = true
	pool := r.h.Superseded
	if len(pool) == 0 {
		return nil
	}
	for _, c := range r.h.Commits {
		if len(pool) == 0 {
			break
		}
		if c.Intent.Seq < pool[0].Intent.Seq {
			continue
		}
		// A later commit that stands for a superseded one (given again, or adopted) used it
		// and every one before it up, as keepSuperseded and adopt do.
		if i := slices.IndexFunc(pool, func(s *replay.Commit) bool {
			return s.Intent.Node == c.Intent.Node && s.Intent.Message == c.Intent.Message &&
				s.Intent.Parent == c.Intent.Parent && s.Intent.Tree == c.Intent.Tree
		}); i >= 0 {
			pool = pool[i+1:]
		}
	}
	r.superseded = slices.Clone(pool)
	// A node an executor call worked in since the rerun that superseded the newest of them
	// began (in any process since) holds that work: its commits are made again, not given as recorded.
	newest := r.h.Superseded[len(r.h.Superseded)-1].Intent.Seq
	if i := slices.IndexFunc(r.h.StartSeqs, func(s uint64) bool { return s > newest }); i >= 0 {
		for name, nd := range r.h.Nodes {
			if nd.PlacedSeq > r.h.StartSeqs[i] {
				n := r.ws.node(name)
				n.mu.Lock()
				n.worked = true
				n.mu.Unlock()
			}
		}
	}
	return r.finishSuperseded()
}

// finishSuperseded records what git did for the last superseded commit when its process died
// between the intent and the result, perhaps after git moved the ref: before anything is made
// again, so that a commit made again swaps the ref from where it is.
func (r *runner) finishSuperseded() error {
	if len(r.superseded) == 0 {
		return nil
	}
	last := r.superseded[len(r.superseded)-1]
	if last.Intent.Status != "" || r.resultOf(last) != nil {
		return nil
	}
	res, err := r.commitRows(last.Intent, false)
	if err != nil {
		return err
	}
	r.setResult(last, res)
	return nil
}

// keepSuperseded gives the next superseded commit of the node with this message again when no
// executor call of this process worked in its node's worktree: the rerun changed nothing it committed, and its worktree now
// also holds what later calls of the paused process wrote there, which the commit did not
// have. Its rows are written again, so later resumes and shadows replay them in its place.
func (r *runner) keepSuperseded(node, message string) (json.RawMessage, bool, error) {
	k := slices.IndexFunc(r.superseded, func(c *replay.Commit) bool {
		return c.Intent.Node == node && c.Intent.Message == message
	})
	if k < 0 {
		return nil, false, nil
	}
	n := r.ws.node(node)
	n.mu.Lock()
	worked := n.worked
	n.mu.Unlock()
	if worked {
		return nil, false, nil
	}
	c := r.superseded[k]
	r.superseded = r.superseded[k+1:]
	intent := *c.Intent
	intent.Seq = 0
	if result := r.resultOf(c); intent.Status != "" || result != nil {
		rows := []*journal.Row{&intent}
		var res *journal.Row
		if result != nil {
			cp := *result
			cp.Seq = 0
			res = &cp
			rows = append(rows, res)
		}
		r.j.Append(rows...)
		r.flushSoon()
		out, err := CommitOutcome(&intent, res)
		return out, true, err
	}
	out, err := r.intendAndApply(&intent)
	return out, true, err
}

// adopt is the result of a superseded commit that the intent would make again: the same node
// and message, the node's ref and worktree still at that commit, and the same tree pending. The
// intent then stands for it (its parent, old value and identity become the record's), and
// nothing is committed twice. nil when no superseded commit is one.
func (r *runner) adopt(intent *journal.Row) *journal.Row {
	for i, c := range r.superseded {
		res := r.resultOf(c)
		if c.Intent.Node != intent.Node || c.Intent.Message != intent.Message || res == nil || res.Commit == "" {
			continue
		}
		if res.Commit != intent.Parent || res.Commit != intent.Old || res.Tree != intent.Tree {
			return nil
		}
		r.superseded = r.superseded[i+1:]
		intent.Parent, intent.Old, intent.Head = c.Intent.Parent, c.Intent.Old, c.Intent.Head
		intent.Author, intent.Email, intent.At = c.Intent.Author, c.Intent.Email, c.Intent.At
		return &journal.Row{Type: journal.TypeCommitResult, Node: intent.Node, Commit: res.Commit, Tree: res.Tree, Parent: res.Parent, Ref: res.Ref}
	}
	return nil
}

// applyCommit makes the commit an intent names and moves the refs it names, then records the
// result. Made again from the same intent (a process died before the result was recorded), it
// finds the commit on the ref and moves nothing twice.
func (r *runner) applyCommit(intent *journal.Row) (json.RawMessage, error) {
	res, err := r.commitRows(intent, true)
	if err != nil {
		return nil, err
	}
	return CommitOutcome(intent, res)
}

// applyRecorded makes a recorded intent's commit, whose process died before its result. Under
// the node's lock it looks again: a placement of the node may have recorded that result since
// (finishDeadCommit), and an intent has one result.
func (r *runner) applyRecorded(c *replay.Commit) (json.RawMessage, error) {
	ctx := context.WithoutCancel(r.ctx)
	repo, err := r.ws.open(ctx)
	if err != nil {
		return nil, r.loggedThrow(errs.CapabilityUnavailable, "worktree_failed", err, "crw.commit: the repository cannot be opened")
	}
	n := r.ws.node(c.Intent.Node)
	n.mu.Lock()
	defer n.mu.Unlock()
	if res := r.resultOf(c); res != nil {
		return CommitOutcome(c.Intent, res)
	}
	res, err := r.commitRowsLocked(ctx, repo, n, c.Intent, true)
	if err != nil {
		return nil, err
	}
	r.setResult(c, res)
	return CommitOutcome(c.Intent, res)
}

// commitRows makes an intent's commit and records its result row, which it returns. Without
// move it only records what a dead process did: the result when the node's ref is at the
// intent's commit (the worktree's HEAD is moved there too), nothing (nil) when it is not.
func (r *runner) commitRows(intent *journal.Row, move bool) (*journal.Row, error) {
	ctx := context.WithoutCancel(r.ctx)
	repo, err := r.ws.open(ctx)
	if err != nil {
		return nil, r.loggedThrow(errs.CapabilityUnavailable, "worktree_failed", err, "crw.commit: the repository cannot be opened")
	}
	n := r.ws.node(intent.Node)
	n.mu.Lock()
	defer n.mu.Unlock()
	return r.commitRowsLocked(ctx, repo, n, intent, move)
}

// commitRowsLocked is commitRows with the repository open and the node's lock held.
func (r *runner) commitRowsLocked(ctx context.Context, repo *workspace.Repo, n *nodeState, intent *journal.Row, move bool) (*journal.Row, error) {
	record := func(res *journal.Row) (*journal.Row, error) {
		r.j.Append(res)
		r.flushSoon()
		return res, nil
	}
	commit, err := repo.CommitTree(ctx, intent.Tree, intent.Parent, commitMessage(intent.Message),
		workspace.Identity{Name: intent.Author, Email: intent.Email, At: intent.At})
	if err != nil {
		return nil, r.loggedThrow(errs.CapabilityUnavailable, "worktree_failed", err, "crw.commit: node %q: git could not make its commit", intent.Node)
	}
	if !move {
		if cur, err := repo.Ref(ctx, intent.Ref); err != nil || cur != commit {
			return nil, nil
		}
	} else if err := repo.SwapRef(ctx, intent.Ref, commit, intent.Old); err != nil {
		cur, _ := repo.Ref(ctx, intent.Ref)
		if cur != commit {
			if errors.Is(err, workspace.ErrRefMoved) {
				return record(&journal.Row{Type: journal.TypeCommitResult, Node: intent.Node, Ref: intent.Ref, Reason: "revision_conflict",
					Detail: fmt.Sprintf("%s is at %s, not at %s as the run recorded: it moved under the run, and is left as it is",
						intent.Ref, orNone(cur), orNone(intent.Old))})
			}
			return nil, r.loggedThrow(errs.CapabilityUnavailable, "worktree_failed", err, "crw.commit: node %q: git could not move its ref", intent.Node)
		}
	}
	if intent.Alloc == n.Alloc && n.Path != "" {
		// The worktree goes to the commit it holds the tree of. One that is gone is made
		// again there by the next call's restore.
		if cur, err := repo.Head(ctx, n.Path); err == nil && cur != commit {
			if err := repo.SwapHead(ctx, n.Path, commit, intent.Head); err != nil {
				r.j.Append(&journal.Row{Type: journal.TypeWarning, Reason: "worktree_head_moved",
					Detail: fmt.Sprintf("node %q: the HEAD of %s moved while it was committed: %v", intent.Node, n.Path, err)})
			}
		}
		n.At, n.Tree = commit, intent.Tree
	}
	n.Ref = commit
	return record(&journal.Row{Type: journal.TypeCommitResult, Node: intent.Node, Commit: commit, Tree: intent.Tree, Parent: intent.Parent, Ref: intent.Ref})
}

// finishDeadCommit records what git did for the node's commit intent whose process died before
// its result, when git moved the node's ref to that commit: the ref then moved under the
// journal, not under the run. A resume that reruns a held call places it before the script
// reaches the commit (a paused process made the commit after the held row). It reports whether
// the node's ref is now the run's again. The node's lock is held.
func (r *runner) finishDeadCommit(ctx context.Context, repo *workspace.Repo, n *nodeState) bool {
	if r.h == nil {
		return false
	}
	r.resultsMu.Lock()
	c := r.h.UnfinishedCommit() // its Result is read under resultsMu, as setResult writes it
	r.resultsMu.Unlock()
	if c == nil || c.Intent.Node != n.Name || c.Intent.Old != n.Ref {
		return false
	}
	res, err := r.commitRowsLocked(ctx, repo, n, c.Intent, false)
	if err != nil || res == nil {
		return false
	}
	r.setResult(c, res)
	return true
}

// resultOf is a recorded commit's result, which a placement may record for a dead process
// (finishDeadCommit) while the script's loop reads it.
func (r *runner) resultOf(c *replay.Commit) *journal.Row {
	r.resultsMu.Lock()
	defer r.resultsMu.Unlock()
	return c.Result
}

func (r *runner) setResult(c *replay.Commit, res *journal.Row) {
	r.resultsMu.Lock()
	c.Result = res
	r.resultsMu.Unlock()
}

// commitMessage ends a message with one newline, as git commit does.
func commitMessage(m string) string {
	for len(m) > 0 && m[len(m)-1] == '\n' {
		m = m[:len(m)-1]
	}
	return m + "\n"
}

// CommitOutcome is what crw.commit gives the script for a recorded intent and result: the
// same on every replay.
func CommitOutcome(intent, res *journal.Row) (json.RawMessage, error) {
	if intent.Status != "" {
		// A refusal the run recorded: the same error on every replay.
		return nil, errs.Throw(errs.Code(intent.Status), intent.Reason, "%s", intent.Detail)
	}
	if res.Reason != "" {
		return nil, errs.Throw(errs.RevisionConflict, res.Reason, "crw.commit: node %q: %s", intent.Node, res.Detail)
	}
	out, err := json.Marshal(CommitResult{Node: intent.Node, Commit: res.Commit, Tree: res.Tree, Parent: res.Parent, Ref: res.Ref,
		Message: intent.Message})
	return out, err
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// TierStep implements crw.Host: the node's executor calls from now on run as the next tier
// (executor → executor-t1, with the pair the role table gives it), in a new allocation of the
// node from its last commit. Only the null_model of an executor call of the node is evidence.
func (r *runner) TierStep(node, evidence string) (json.RawMessage, error) {
	k := r.tierSteps
	if told := r.toldHolds[node]; len(told) > 0 {
		return nil, errs.Throw(errs.UnreconciledEffect, "recovery_hold", "crw.tierStep: node %q is in recovery_hold: call %s has an unknown outcome (crw flow recover %s %s)", node, told[0], r.id, told[0])
	}
	r.mu.Lock()
	e := r.ended[evidence]
	r.mu.Unlock()
	switch {
	case e == nil:
		return nil, errs.Throw(errs.InvalidRequest, "", "crw.tierStep: the evidence names call %q, which is no ended call of this run", evidence)
	case e.node != node:
		return nil, errs.Throw(errs.InvalidRequest, "", "crw.tierStep: the evidence is call %s, of node %q, not of node %q", evidence, e.node, node)
	case !replay.Writes(e.role):
		return nil, errs.Throw(errs.InvalidRequest, "", "crw.tierStep: the evidence is call %s, a %s call: a tier step moves a node's executor calls", evidence, e.role)
	case e.status != journal.StatusNullModel:
		return nil, errs.Throw(errs.InvalidRequest, "", "crw.tierStep: the evidence is call %s, which ended %s: only a null_model is evidence for a tier step", evidence, e.status)
	case r.tiers[node] >= 1:
		return nil, errs.Throw(errs.InvalidRequest, "", "crw.tierStep: node %q runs at the top tier already (executor-t1)", node)
	}
	r.tierSteps++
	r.tiers[node]++
	pair := r.roles["executor-t1"]
	if r.h != nil && k < len(r.h.TierSteps) {
		rec := r.h.TierSteps[k]
		if rec.Node != node || rec.Evidence != evidence {
			d := fmt.Errorf("crw.tierStep #%d: the script steps node %q on call %s; the journal's step #%d is of node %q on call %s",
				k+1, node, evidence, k+1, rec.Node, rec.Evidence)
			r.stop(errs.New(errs.RevisionConflict, "run %s: %v", r.id, d).Because("replay", "divergence", "stopped", errs.Certain).
				Next("resume it with the script it was recorded with; crw flow shadow shows what changed"))
			return nil, errs.Throw(errs.RevisionConflict, "divergence", "%v", d)
		}
		return TierOutcome(rec)
	}
	n := r.ws.node(node)
	n.mu.Lock()
	row := &journal.Row{Type: journal.TypeTierStep, Node: node, Evidence: evidence, Tier: r.tiers[node], Role: "executor-t1",
		ConfiguredPair: &pair, Alloc: n.Alloc + 1}
	n.Tier, n.NextAlloc = row.Tier, row.Alloc
	n.mu.Unlock()
	rows := []*journal.Row{row}
	if r.spec.TierSteps == "ask" {
		// The step waits for the owner: the node's next executor call runs only once the
		// decision approves it (missing_step_decision until then).
		row.DecisionID = TierDecisionID(node, row.Tier)
		rows = append(rows, &journal.Row{Type: journal.TypeDecisionRequested, DecisionID: row.DecisionID, Node: node,
			Question: fmt.Sprintf("Move node %q's executor calls up to %s (%s)? Its executor call %s ended null_model.", node, row.Role, pairText(pair), evidence),
			Schema:   json.RawMessage(approveSchema)})
		r.mu.Lock()
		r.stepAsks[row.DecisionID] = &stepAsk{}
		r.mu.Unlock()
	}
	r.j.Append(rows...)
	r.flushSoon()
	return TierOutcome(row)
}

// TierDecisionID is the decision a tier step of node to tier waits for under --tier-steps ask.
func TierDecisionID(node string, tier int) string { return fmt.Sprintf("tier-step/%s/%d", node, tier) }

// approveSchema is a tier step decision's: {"approve": true} lets the step go on.
const approveSchema = `{"type":"object","properties":{"approve":{"type":"boolean"}},"required":["approve"],"additionalProperties":false}`

// stepAsk is a tier step's decision: answered, and whether it approved the step.
type stepAsk struct{ answered, approve bool }

func pairText(p journal.Pair) string {
	switch {
	case p.Model == "" && p.Effort == "":
		return "the pair the host picks"
	case p.Effort == "":
		return p.Model
	}
	return p.Model + ", " + p.Effort
}

// stepDecisionGateLocked holds an executor-t1 call whose node's tier step waits for its
// decision, and refuses one whose step the owner declined.
func (r *runner) stepDecisionGateLocked(c *call) *journal.Row {
	if c.req.Role != "executor-t1" || r.spec.TierSteps != "ask" {
		return nil
	}
	id := TierDecisionID(c.req.Node, 1)
	ask := r.stepAsks[id]
	switch {
	case ask == nil:
		return nil
	case !ask.answered:
		return &journal.Row{Type: journal.TypeHeld, Reason: "missing_step_decision",
			Detail: fmt.Sprintf("node %q's tier step waits for the decision %s: crw flow answer %s %s --value '{\"approve\": true}'", c.req.Node, id, r.id, id)}
	case !ask.approve:
		return &journal.Row{Type: journal.TypeRefused, Reason: "policy_refused", Detail: fmt.Sprintf("the decision %s declined node %q's tier step", id, c.req.Node)}
	}
	return nil
}

// TierResult is what crw.tierStep returns.
type TierResult struct {
	Node     string       `json:"node"`
	Tier     int          `json:"tier"`
	Role     string       `json:"role"`
	Pair     journal.Pair `json:"pair"`
	Evidence string       `json:"evidence"`
	// Decision is the decision the step waits for (--tier-steps ask), null when none.
	Decision *string `json:"decision"`
}

func TierOutcome(row *journal.Row) (json.RawMessage, error) {
	var pair journal.Pair
	if row.ConfiguredPair != nil {
		pair = *row.ConfiguredPair
	}
	out := TierResult{Node: row.Node, Tier: row.Tier, Role: row.Role, Pair: pair, Evidence: row.Evidence}
	if row.DecisionID != "" {
		id := row.DecisionID
		out.Decision = &id
	}
	return json.Marshal(out)
}
