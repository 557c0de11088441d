package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/crw-dev/crw/engine/placer"
	"github.com/crw-dev/crw/engine/replay"
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
		return json.Marshal(CommitResult{Node: node, Commit: "dry-run", Tree: "dry-run", Parent: "dry-run", Ref: placer.NodeRef(r.id, node), Message: message})
	}
	if !r.placer.Has() {
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
		if res := r.placer.ResultOf(rec); rec.Intent.Status != "" || res != nil {
			return CommitOutcome(rec.Intent, res)
		}
		return r.applyRecorded(rec)
	}
	if out, kept, err := r.keepSuperseded(node, message); kept {
		return out, err
	}
	// What the worktrees' state decides is recorded, refusals too (an intent with the error
	// and no result): a replay, whose worktrees are as the run left them, gives the same.
	intent, refusal := r.placer.Intent(node, message)
	if refusal != nil {
		row := &journal.Row{Type: journal.TypeCommitIntent, Node: node, Message: message, Status: string(refusal.Code), Reason: refusal.Reason,
			Detail: "crw.commit: " + refusal.Detail}
		r.j.Append(row)
		r.flushSoon()
		return CommitOutcome(row, nil)
	}
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
				r.placer.MarkWorked(name)
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
	if last.Intent.Status != "" || r.placer.ResultOf(last) != nil {
		return nil
	}
	res, err := r.placer.CommitRows(last.Intent, false)
	if err != nil {
		return err
	}
	r.placer.SetResult(last, res)
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
	if r.placer.Worked(node) {
		return nil, false, nil
	}
	c := r.superseded[k]
	r.superseded = r.superseded[k+1:]
	intent := *c.Intent
	intent.Seq = 0
	if result := r.placer.ResultOf(c); intent.Status != "" || result != nil {
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
		res := r.placer.ResultOf(c)
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
	res, err := r.placer.CommitRows(intent, true)
	if err != nil {
		return nil, err
	}
	return CommitOutcome(intent, res)
}

// applyRecorded makes a recorded intent's commit, whose process died before its result. Under
// the node's lock it looks again: a placement of the node may have recorded that result since
// (finishDeadCommit), and an intent has one result.
func (r *runner) applyRecorded(c *replay.Commit) (json.RawMessage, error) {
	res, err := r.placer.ApplyRecorded(c)
	if err != nil {
		return nil, err
	}
	return CommitOutcome(c.Intent, res)
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
	row := &journal.Row{Type: journal.TypeTierStep, Node: node, Evidence: evidence, Tier: r.tiers[node], Role: "executor-t1",
		ConfiguredPair: &pair, Alloc: r.placer.StepTier(node, r.tiers[node])}
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
