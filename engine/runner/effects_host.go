package runner

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/crw-dev/crw/engine/runner/effects"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

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

// stepAsk is a tier step's decision: answered, and whether it approved the step.
type stepAsk struct{ answered, approve bool }

// stepDecisionGateLocked holds an executor-t1 call whose node's tier step waits for its
// decision, and refuses one whose step the owner declined.
func (r *runner) stepDecisionGateLocked(c *call) *journal.Row {
	if c.req.Role != "executor-t1" || r.spec.TierSteps != "ask" {
		return nil
	}
	id := effects.TierDecisionID(c.req.Node, 1)
	ask := r.stepAsks[id]
	switch {
	case ask == nil:
		return nil
	case !ask.answered:
		return journal.Held("missing_step_decision", fmt.Sprintf("node %q's tier step waits for the decision %s: crw flow answer %s %s --value '{\"approve\": true}'", c.req.Node, id, r.id, id))
	case !ask.approve:
		return journal.Refused("policy_refused", fmt.Sprintf("the decision %s declined node %q's tier step", id, c.req.Node))
	}
	return nil
}

// Commit implements crw.Host: the run's effects make it (engine/runner/effects).
func (r *runner) Commit(node, message string) (json.RawMessage, error) {
	return r.fx.Commit(node, message)
}

// TierStep implements crw.Host: the run's effects make it (engine/runner/effects).
func (r *runner) TierStep(node, evidence string) (json.RawMessage, error) {
	return r.fx.TierStep(node, evidence)
}

// effectsHost is the runner as the effects see it.
type effectsHost struct{ r *runner }

var _ effects.Host = effectsHost{}

func (h effectsHost) Stopping() error                    { return context.Cause(h.r.ctx) }
func (h effectsHost) Stop(err error)                     { h.r.stop(err) }
func (h effectsHost) Append(rows ...*journal.Row) uint64 { return h.r.j.Append(rows...) }
func (h effectsHost) Sync(seq uint64) error              { return h.r.j.Sync(seq) }
func (h effectsHost) FlushSoon()                         { h.r.flushSoon() }
func (h effectsHost) Logged(e *errs.Error) string        { return h.r.logged(e) }
func (h effectsHost) ToldHolds(node string) []string     { return h.r.toldHolds[node] }
func (h effectsHost) LeftAt() (uint64, bool)             { return h.r.replay.LeftAt() }
func (h effectsHost) AskStep(id string) {
	h.r.mu.Lock()
	h.r.stepAsks[id] = &stepAsk{}
	h.r.mu.Unlock()
}

func (h effectsHost) Ended(call string) (effects.Ended, bool) {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	e := h.r.ended[call]
	if e == nil {
		return effects.Ended{}, false
	}
	return effects.Ended{Node: e.node, Role: e.role, Status: e.status}, true
}
