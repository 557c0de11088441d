// Package effects is a run's crw.commit and crw.tierStep: the effects a workflow has on its
// nodes besides its calls. A commit's intent is durable before git is touched and its result
// recorded after; a replay gives what the journal recorded and commits nothing again, and the
// commits a pause's rerun superseded are made again or given again as the rerun decides. The
// git side is the placer's (engine/placer); the rows go through the run's host.
package effects

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/engine/placer"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/termtext"
	"github.com/crw-dev/crw/journal"
)

// Ended is what the host keeps of a call whose result the script has: a tier step's evidence.
type Ended struct {
	Node, Role string
	Status     journal.CallStatus
}

// Host is what the effects ask of the run's host.
type Host interface {
	// Stopping is why the run stops; nil while it goes on.
	Stopping() error
	// Stop stops the process without ending the run (a divergence).
	Stop(err error)
	Append(rows ...*journal.Row) uint64
	Sync(seq uint64) error
	// FlushSoon asks for the rows appended to be made durable soon.
	FlushSoon()
	// Logged writes an error's full account to the run's log and is its detail naming that
	// line.
	Logged(e *errs.Error) string
	// ToldHolds are the calls with an unknown outcome of node the script has been told of,
	// and whose verdict has not reached it.
	ToldHolds(node string) []string
	// Ended is an ended call of the run, by id.
	Ended(call string) (Ended, bool)
	// AskStep registers a tier step's decision, which holds the node's next executor call.
	AskStep(decisionID string)
	// LeftAt is where a pause's rerun left the journal's record (replay.Replayer.LeftAt).
	LeftAt() (uint64, bool)
	// OwedWriter is a call of node that writes the record has and the script has not made
	// again yet (replay.Replayer.OwedWriter).
	OwedWriter(node string) *replay.Call
}

// Config is a run's effects in one process.
type Config struct {
	Run     string
	DryRun  bool            // a rehearsal: nothing is committed, a stand-in answers
	History *replay.History // nil for the run's first process
	Placer  *placer.Placer
	Roles   inputs.RoleTable
	// TierSteps is auto or ask (a tier step waits for its decision).
	TierSteps string
}

// Effects are a run's commits and tier steps in one process; its methods run on the script's
// loop goroutine, in script order, as a replay matches them with the journal's.
type Effects struct {
	cfg  Config
	host Host
	// The script's crw.commit and crw.tierStep calls so far, and each node's tier.
	commits, tierSteps int
	tiers              map[string]int
	// superseded are the recorded commits this process makes again: those after the held row
	// of the call whose rerun left the record (Replayer.LeftAt), or those an earlier process's
	// rerun left and did not make again before it died (seeded at the first commit).
	superseded       []*replay.Commit
	supersededSeeded bool
}

// New is a run's effects.
func New(cfg Config, host Host) *Effects {
	return &Effects{cfg: cfg, host: host, tiers: map[string]int{}}
}

// Tier is the node's tier: 1 once a tier step moved its executor calls up.
func (f *Effects) Tier(node string) int { return f.tiers[node] }

// thrown is an error thrown into the workflow for a failure whose cause is raw text (git's
// stderr, an I/O error): the cause goes to the run's log, and the error names its code, reason
// and log line instead.
func (f *Effects) thrown(code errs.Code, reason string, cause error, format string, args ...any) error {
	e := errs.New(code, format, args...).Wrap(cause).Because("commit", reason, errs.Stopped, errs.Certain)
	return errs.Throw(code, reason, "%s", f.host.Logged(e))
}

// CommitResult is what crw.commit resolves to.
type CommitResult struct {
	Node    string `json:"node"`
	Commit  string `json:"commit"`
	Tree    string `json:"tree"`
	Parent  string `json:"parent"`
	Ref     string `json:"ref"`
	Message string `json:"message"`
}

// CommitDivergence is how the script's commit #k+1, of node with message, differs from rec, the
// journal's commit at its place; nil when it does not. A run stops there (DivergenceStop), and
// so does its shadow.
func CommitDivergence(k int, rec *replay.Commit, node, message string) error {
	if rec.Intent.Node == node && rec.Intent.Message == message {
		return nil
	}
	return fmt.Errorf("crw.commit #%d: the script commits node %q with message %q; the journal's commit #%d is of node %q with message %q",
		k+1, node, termtext.Clip(message, 80), k+1, rec.Intent.Node, termtext.Clip(rec.Intent.Message, 80))
}

// OwedCommitDivergence is the script's commit #k+1 of node, which the journal does not have,
// made before call, a later call of the node that writes, is made again: a commit then would
// hold what that call wrote.
func OwedCommitDivergence(k int, node, call string) error {
	return fmt.Errorf("crw.commit #%d of node %q: the journal has no commit here, and its call %s of the node, which writes, comes after it: a commit now would hold what that call wrote", k+1, node, call)
}

// TierStepDivergence is how the script's tier step #k+1, of node on the evidence call, differs
// from rec, the journal's step at its place; nil when it does not.
func TierStepDivergence(k int, rec *journal.Row, node, evidence string) error {
	if rec.Node == node && rec.Evidence == evidence {
		return nil
	}
	return fmt.Errorf("crw.tierStep #%d: the script steps node %q on call %s; the journal's step #%d is of node %q on call %s",
		k+1, node, evidence, k+1, rec.Node, rec.Evidence)
}

// DivergenceStop is why a run stops at the divergence d (an effect the script asks otherwise
// than its journal recorded): its process goes no further, whatever the script does with what
// is thrown (DivergenceThrown).
func DivergenceStop(run string, d error) *errs.Error {
	return errs.New(errs.RevisionConflict, "run %s: %v", run, d).Because("replay", "divergence", errs.Stopped, errs.Certain).
		Next("resume it with the script it was recorded with; crw flow shadow shows what changed")
}

// DivergenceThrown is what the script is thrown at the divergence d, as its process stops.
func DivergenceThrown(d error) error { return errs.Throw(errs.RevisionConflict, "divergence", "%v", d) }

// NoRepository is what crw.commit throws in a run without a repository, the same in a run and
// in its shadow.
func NoRepository() error {
	return errs.Throw(errs.InvalidRequest, "", "crw.commit: the run has no repository: start it in a git checkout or with --repo DIR")
}

// Commit implements crw.Host: the pending tree of the node's worktree committed on the commit
// the worktree is to be at, and put on the node's ref by compare-and-swap against the value
// the run gave it. The intent is durable before git is touched and the result is recorded
// after; a replay gives the recorded result and commits nothing, and an intent whose result
// was not recorded is finished from the intent alone (its commit is the same object again).
func (f *Effects) Commit(node, message string) (json.RawMessage, error) {
	// What the script's order alone decides is thrown without a record: a replay decides it
	// the same way at the same place.
	if err := f.host.Stopping(); err != nil {
		return nil, f.thrown(errs.RunUnavailable, "run_stopping", err, "crw.commit: the run is stopping")
	}
	if f.cfg.DryRun {
		// A rehearsal commits nothing: the stand-in says so in place of each hash.
		return json.Marshal(CommitResult{Node: node, Commit: "dry-run", Tree: "dry-run", Parent: "dry-run", Ref: placer.NodeRef(f.cfg.Run, node), Message: message})
	}
	if !f.cfg.Placer.Has() {
		return nil, NoRepository()
	}
	if told := f.host.ToldHolds(node); len(told) > 0 {
		return nil, RecoveryHold("crw.commit", node, told[0], f.cfg.Run)
	}
	if err := f.seedSuperseded(); err != nil {
		return nil, err
	}
	k := f.commits
	f.commits++
	if f.cfg.History != nil && k < len(f.cfg.History.Commits) {
		if at, left := f.host.LeftAt(); left && f.cfg.History.SupersededBy(f.cfg.History.Commits[k].Intent.Seq, at) {
			// The process that recorded this commit and every later one had the result of
			// a call a pause held; this one has the rerun's: they are made again.
			f.superseded = f.cfg.History.Commits[k:]
			k, f.commits = len(f.cfg.History.Commits), len(f.cfg.History.Commits)+1
			if err := f.finishSuperseded(); err != nil {
				return nil, err
			}
		}
	}
	if f.cfg.History != nil && k < len(f.cfg.History.Commits) {
		rec := f.cfg.History.Commits[k]
		if d := CommitDivergence(k, rec, node, message); d != nil {
			f.host.Stop(DivergenceStop(f.cfg.Run, d))
			return nil, DivergenceThrown(d)
		}
		if res := f.cfg.Placer.ResultOf(rec); rec.Intent.Status != "" || res != nil {
			return CommitOutcome(rec.Intent, res)
		}
		return f.applyRecorded(rec)
	}
	if f.cfg.History != nil {
		if c := f.host.OwedWriter(node); c != nil {
			// A commit the record has none of, before the record's calls of the node are made
			// again: the node's worktree holds what they wrote. The script took another path.
			d := OwedCommitDivergence(k, node, c.ID)
			f.host.Stop(DivergenceStop(f.cfg.Run, d))
			return nil, DivergenceThrown(d)
		}
	}
	if out, kept, err := f.keepSuperseded(node, message); kept {
		return out, err
	}
	// What the worktrees' state decides is recorded, refusals too (an intent with the error
	// and no result): a replay, whose worktrees are as the run left them, gives the same.
	intent, refusal := f.cfg.Placer.Intent(node, message)
	if refusal != nil {
		row := journal.Commit{Node: node, Message: message, Status: string(refusal.Code), Reason: refusal.Reason,
			Detail: "crw.commit: " + refusal.Detail}.Row()
		f.host.Append(row)
		f.host.FlushSoon()
		return CommitOutcome(row, nil)
	}
	if res := f.adopt(intent); res != nil {
		f.host.Append(intent, res)
		f.host.FlushSoon()
		return CommitOutcome(intent, res)
	}
	return f.intendAndApply(intent)
}

// intendAndApply makes the intent durable before git is touched, then makes its commit.
func (f *Effects) intendAndApply(intent *journal.Row) (json.RawMessage, error) {
	seq := f.host.Append(intent)
	if err := f.host.Sync(seq); err != nil {
		f.host.Stop(err)
		return nil, f.thrown(errs.RunUnavailable, "run_stopping", err, "crw.commit: the journal could not be written")
	}
	return f.applyCommit(intent)
}

// seedSuperseded takes, at this process's first commit, the commits an earlier process's rerun
// superseded (History.Superseded) and did not give again before it died: the pool keepSuperseded
// and adopt draw from, as they would have in that process.
func (f *Effects) seedSuperseded() error {
	if f.supersededSeeded || f.cfg.History == nil {
		return nil
	}
	f.supersededSeeded = true
	pool := f.cfg.History.Superseded
	if len(pool) == 0 {
		return nil
	}
	for _, c := range f.cfg.History.Commits {
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
	f.superseded = slices.Clone(pool)
	// A node an executor call worked in since the rerun that superseded the newest of them
	// began (in any process since) holds that work: its commits are made again, not given as recorded.
	newest := f.cfg.History.Superseded[len(f.cfg.History.Superseded)-1].Intent.Seq
	if i := slices.IndexFunc(f.cfg.History.StartSeqs, func(s uint64) bool { return s > newest }); i >= 0 {
		for name, nd := range f.cfg.History.Nodes {
			if nd.PlacedSeq > f.cfg.History.StartSeqs[i] {
				f.cfg.Placer.MarkWorked(name)
			}
		}
	}
	return f.finishSuperseded()
}

// finishSuperseded records what git did for the last superseded commit when its process died
// between the intent and the result, perhaps after git moved the ref: before anything is made
// again, so that a commit made again swaps the ref from where it is.
func (f *Effects) finishSuperseded() error {
	if len(f.superseded) == 0 {
		return nil
	}
	last := f.superseded[len(f.superseded)-1]
	if last.Intent.Status != "" || f.cfg.Placer.ResultOf(last) != nil {
		return nil
	}
	res, err := f.cfg.Placer.CommitRows(last.Intent, false)
	if err != nil {
		return err
	}
	f.cfg.Placer.SetResult(last, res)
	return nil
}

// keepSuperseded gives the next superseded commit of the node with this message again when no
// executor call of this process worked in its node's worktree: the rerun changed nothing it committed, and its worktree now
// also holds what later calls of the paused process wrote there, which the commit did not
// have. Its rows are written again, so later resumes and shadows replay them in its place.
func (f *Effects) keepSuperseded(node, message string) (json.RawMessage, bool, error) {
	k := slices.IndexFunc(f.superseded, func(c *replay.Commit) bool {
		return c.Intent.Node == node && c.Intent.Message == message
	})
	if k < 0 {
		return nil, false, nil
	}
	if f.cfg.Placer.Worked(node) {
		return nil, false, nil
	}
	c := f.superseded[k]
	f.superseded = f.superseded[k+1:]
	intent := *c.Intent
	intent.Seq = 0
	if result := f.cfg.Placer.ResultOf(c); intent.Status != "" || result != nil {
		rows := []*journal.Row{&intent}
		var res *journal.Row
		if result != nil {
			cp := *result
			cp.Seq = 0
			res = &cp
			rows = append(rows, res)
		}
		f.host.Append(rows...)
		f.host.FlushSoon()
		out, err := CommitOutcome(&intent, res)
		return out, true, err
	}
	out, err := f.intendAndApply(&intent)
	return out, true, err
}

// adopt is the result of a superseded commit that the intent would make again: the same node
// and message, the node's ref and worktree still at that commit, and the same tree pending. The
// intent then stands for it (its parent, old value and identity become the record's), and
// nothing is committed twice. nil when no superseded commit is one.
func (f *Effects) adopt(intent *journal.Row) *journal.Row {
	for i, c := range f.superseded {
		res := f.cfg.Placer.ResultOf(c)
		if c.Intent.Node != intent.Node || c.Intent.Message != intent.Message || res == nil || res.Commit == "" {
			continue
		}
		if res.Commit != intent.Parent || res.Commit != intent.Old || res.Tree != intent.Tree {
			return nil
		}
		f.superseded = f.superseded[i+1:]
		intent.Parent, intent.Old, intent.Head = c.Intent.Parent, c.Intent.Old, c.Intent.Head
		intent.Author, intent.Email, intent.At = c.Intent.Author, c.Intent.Email, c.Intent.At
		return journal.CommitResult{Node: intent.Node, Commit: res.Commit, Tree: res.Tree, Parent: res.Parent, Ref: res.Ref}.Row()
	}
	return nil
}

// applyCommit makes the commit an intent names and moves the refs it names, then records the
// result. Made again from the same intent (a process died before the result was recorded), it
// finds the commit on the ref and moves nothing twice.
func (f *Effects) applyCommit(intent *journal.Row) (json.RawMessage, error) {
	res, err := f.cfg.Placer.CommitRows(intent, true)
	if err != nil {
		return nil, err
	}
	return CommitOutcome(intent, res)
}

// applyRecorded makes a recorded intent's commit, whose process died before its result. Under
// the node's lock it looks again: a placement of the node may have recorded that result since
// (finishDeadCommit), and an intent has one result.
func (f *Effects) applyRecorded(c *replay.Commit) (json.RawMessage, error) {
	res, err := f.cfg.Placer.ApplyRecorded(c)
	if err != nil {
		return nil, err
	}
	return CommitOutcome(c.Intent, res)
}

// RecoveryHold is what crw.commit and crw.tierStep (fn) throw on a node the script holds
// because it was given call's unknown outcome, in run, and not yet the verdict on it: a replay
// and a shadow throw it at the same place (the hold runs from the outcome's delivery to the
// verdict's).
func RecoveryHold(fn, node, call, run string) error {
	return errs.Throw(errs.UnreconciledEffect, "recovery_hold", "%s: node %q is in recovery_hold: call %s has an unknown outcome (crw flow recover %s %s)", fn, node, call, run, call)
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

// TierStep implements crw.Host: the node's executor calls from now on run as the next tier
// (executor → executor-t1, with the pair the role table gives it), in a new allocation of the
// node from its last commit. Only the null_model of an executor call of the node is evidence.
func (f *Effects) TierStep(node, evidence string) (json.RawMessage, error) {
	k := f.tierSteps
	if told := f.host.ToldHolds(node); len(told) > 0 {
		return nil, RecoveryHold("crw.tierStep", node, told[0], f.cfg.Run)
	}
	e, ok := f.host.Ended(evidence)
	if err := CheckTierStep(node, evidence, e, ok, f.tiers[node], "this run"); err != nil {
		return nil, err
	}
	f.tierSteps++
	f.tiers[node]++
	pair := f.cfg.Roles["executor-t1"]
	if f.cfg.History != nil && k < len(f.cfg.History.TierSteps) {
		rec := f.cfg.History.TierSteps[k]
		if d := TierStepDivergence(k, rec, node, evidence); d != nil {
			f.host.Stop(DivergenceStop(f.cfg.Run, d))
			return nil, DivergenceThrown(d)
		}
		return TierOutcome(rec)
	}
	row := journal.TierStep{Node: node, Evidence: evidence, Tier: f.tiers[node], Role: "executor-t1",
		ConfiguredPair: &pair, Alloc: f.cfg.Placer.StepTier(node, f.tiers[node])}.Row()
	rows := []*journal.Row{row}
	if f.cfg.TierSteps == "ask" {
		// The step waits for the owner: the node's next executor call runs only once the
		// decision approves it (missing_step_decision until then).
		row.DecisionID = TierDecisionID(node, row.Tier)
		rows = append(rows, journal.DecisionRequested{ID: row.DecisionID, Node: node,
			Question: fmt.Sprintf("Move node %q's executor calls up to %s (%s)? Its executor call %s ended null_model.", node, row.Role, pairText(pair), evidence),
			Schema:   json.RawMessage(ApproveSchema)}.Row())
		f.host.AskStep(row.DecisionID)
	}
	f.host.Append(rows...)
	f.host.FlushSoon()
	return TierOutcome(row)
}

// CheckTierStep refuses a tier step of node, at tier (its steps so far), whose evidence is not
// a null_model of one of the node's executor calls: e is how the call evidence ended, when it
// did (ended), among the calls of the run named by of. A refused step takes no place among the
// steps.
func CheckTierStep(node, evidence string, e Ended, ended bool, tier int, of string) error {
	switch {
	case !ended:
		return errs.Throw(errs.InvalidRequest, "", "crw.tierStep: the evidence names call %q, which is no ended call of %s", evidence, of)
	case e.Node != node:
		return errs.Throw(errs.InvalidRequest, "", "crw.tierStep: the evidence is call %s, of node %q, not of node %q", evidence, e.Node, node)
	case !replay.Writes(e.Role):
		return errs.Throw(errs.InvalidRequest, "", "crw.tierStep: the evidence is call %s, a %s call: a tier step moves a node's executor calls", evidence, e.Role)
	case e.Status != journal.StatusNullModel:
		return errs.Throw(errs.InvalidRequest, "", "crw.tierStep: the evidence is call %s, which ended %s: only a null_model is evidence for a tier step", evidence, e.Status)
	case tier >= 1:
		return errs.Throw(errs.InvalidRequest, "", "crw.tierStep: node %q runs at the top tier already (executor-t1)", node)
	}
	return nil
}

// TierDecisionID is the decision a tier step of node to tier waits for under --tier-steps ask.
func TierDecisionID(node string, tier int) string { return fmt.Sprintf("tier-step/%s/%d", node, tier) }

// ApproveSchema is a tier step decision's: {"approve": true} lets the step go on.
const ApproveSchema = `{"type":"object","properties":{"approve":{"type":"boolean"}},"required":["approve"],"additionalProperties":false}`

func pairText(p journal.Pair) string {
	switch {
	case p.Model == "" && p.Effort == "":
		return "the pair the host picks"
	case p.Effort == "":
		return p.Model
	}
	return p.Model + ", " + p.Effort
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
