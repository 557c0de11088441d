package runner

import (
	"fmt"

	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/journal"
)

// gateLocked decides what the run's state says of a call about to start: nil lets it run.
func (r *runner) gateLocked(c *call) *journal.Row {
	if holder, held := r.book.Hold(c.req.Node); held {
		return journal.Held("recovery_hold", fmt.Sprintf("node %q waits on call %s, whose outcome is unknown", c.req.Node, holder))
	}
	if c.resumeOf != nil {
		if holder, _ := r.book.Hold(c.resumeOf.node); holder != "" {
			return journal.Held("recovery_hold", fmt.Sprintf("the resumed call's node %q waits on a call whose outcome is unknown", c.resumeOf.node))
		}
	}
	if c.prepared != nil {
		if by, done := r.book.AppliedBy(func() replay.EffectKey { return replay.EffectKeyOf(c.prepared) }); done {
			// Seed 002: only a proven not_applied permits an equivalent mutation to be retried.
			return journal.Held("recovery_hold", fmt.Sprintf(
				"call %s asked for the same (role, node, prompt, schema) and an operator's verdict says its effect was applied: "+
					"it is not sent again; crw.effect(%q) gives the applied output", by, by))
		}
	}
	if r.paused {
		return journal.Held("engine_paused", "the run is paused by a usage or rate limit")
	}
	if r.spec.TierSteps == "ask" {
		if row := r.book.StepGate(c.req.Role, c.req.Node); row != nil {
			return row
		}
	}
	if b := r.spec.BudgetTokens; b > 0 && r.spent.Total >= b {
		// Not over: a resume with a larger budget (--budget-tokens) runs the call again.
		r.budgetHeld = true
		return journal.Held("budget_exhausted", fmt.Sprintf("the run has spent %d of %d tokens", r.spent.Total, b))
	}
	if c.resumeOf != nil && c.resumeOf.thread().ID == "" {
		return journal.Refused("policy_refused", fmt.Sprintf("call %s has no thread to continue", c.resumeOf.id))
	}
	return nil
}

// pause stops the run admitting calls after a usage or rate limit: one escalation row, and
// every other turn in flight is interrupted.
func (r *runner) pause(by *call, detail string) {
	r.mu.Lock()
	if r.paused {
		r.mu.Unlock()
		return
	}
	r.paused = true
	r.j.Append(journal.Escalation{Call: by.id, Reason: "quota_or_rate", Detail: detail}.Row())
	others := make([]*call, 0, len(r.inflight))
	for o := range r.inflight {
		if o != by {
			others = append(others, o)
		}
	}
	r.mu.Unlock()
	r.progress.PublishSoon()
	for _, o := range others {
		r.interruptCall(o, "engine_paused")
	}
}

// endCallsLeft ends the calls still in flight when the script is done (it threw, or the run was
// cancelled): held cancelled, or past the deadline held budget_exhausted (the run's time is
// spent); so do the calls the loop's last callbacks issued, which it ended before starting.
func (r *runner) endCallsLeft(deadline bool) {
	r.batch.Abandon(errNotStarted)
	reason := "cancelled"
	if deadline {
		reason = ReasonDeadline
	}
	r.interruptAll(reason)
	r.wg.Wait()
}

// interruptAll interrupts every call in flight, e.g. when the script is done or threw.
func (r *runner) interruptAll(reason string) {
	r.mu.Lock()
	all := make([]*call, 0, len(r.inflight))
	for o := range r.inflight {
		all = append(all, o)
	}
	r.mu.Unlock()
	for _, o := range all {
		r.interruptCall(o, reason)
	}
}

// interruptCall journals the interrupt before it is sent, then cancels the call's turn.
func (r *runner) interruptCall(c *call, reason string) {
	ir := journal.InterruptRequested{Call: c.id, Reason: reason}
	if c.running != nil {
		// The step published last: the turn the interrupt is for (a pull backend's).
		c.mu.Lock()
		if c.step != nil {
			ir.Op, ir.Attempt = c.step.Op, c.step.Attempt
		}
		c.mu.Unlock()
	}
	row := ir.Row()
	r.mu.Lock()
	if c.ended || c.interrupt != "" {
		r.mu.Unlock()
		return
	}
	if c.running != nil && !c.take(row) {
		r.mu.Unlock()
		return
	}
	c.interrupt = reason
	seq := r.j.Append(row)
	r.mu.Unlock()
	if err := r.j.Sync(seq); err != nil {
		r.stop(err)
		return
	}
	c.cancel()
}
