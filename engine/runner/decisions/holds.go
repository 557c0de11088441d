package decisions

import (
	"fmt"

	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/runner/effects"
	"github.com/crw-dev/crw/journal"
)

// Hold returns the call whose unknown outcome holds node, if one does.
func (b *Book) Hold(node string) (call string, held bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	call, held = b.holds[node]
	return call, held
}

// AppliedBy returns the call an applied verdict proved made the effect of key, if one did.
// ok is false at once for a run without an applied verdict, which hashes no call's inputs.
func (b *Book) AppliedBy(key func() replay.EffectKey) (call string, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.applied) == 0 {
		return "", false
	}
	call, ok = b.applied[key()]
	return call, ok
}

// EndedUnknown notes a call that ended unknown: it holds its node until a verdict, and key
// (nil when the call was never prepared) is the effect an applied verdict would prove.
func (b *Book) EndedUnknown(node, call string, key *replay.EffectKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if key != nil {
		b.unknownKeys[call] = *key
	}
	if _, held := b.holds[node]; !held {
		b.holds[node] = call
	}
	b.unknown[node] = append(b.unknown[node], call)
}

// HoldFor holds node for call, a call whose outcome the script is given without a terminal
// row (the reconcile pass of a resume decides it), unless another call holds it already.
func (b *Book) HoldFor(node, call string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, held := b.holds[node]; !held {
		b.holds[node] = call
	}
}

// Told notes that the script was given call's unknown outcome: the node is held for the script
// until the verdict reaches it; off the record (a resume that ran a call a pause held again),
// the verdict may have come first.
func (b *Book) Told(node, call string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, decided := b.verdicts[call]; !decided {
		b.toldHolds[node] = append(b.toldHolds[node], call)
	}
}

// ToldHolds are the calls of node whose unknown outcome the script holds without a verdict.
func (b *Book) ToldHolds(node string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.toldHolds[node]
}

// AskStep notes a tier step's decision asked by this process (--tier-steps ask).
func (b *Book) AskStep(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stepAsks[id] = &stepAsk{}
}

// StepGate holds an executor-t1 call whose node's tier step waits for its decision, and
// refuses one whose step the owner declined; nil lets the call go on.
func (b *Book) StepGate(role, node string) *journal.Row {
	if role != "executor-t1" {
		return nil
	}
	id := effects.TierDecisionID(node, 1)
	b.mu.Lock()
	ask := b.stepAsks[id]
	var answered, approve bool
	if ask != nil {
		answered, approve = ask.answered, ask.approve
	}
	b.mu.Unlock()
	switch {
	case ask == nil:
		return nil
	case !answered:
		return journal.Held("missing_step_decision", fmt.Sprintf("node %q's tier step waits for the decision %s: crw flow answer %s %s --value '{\"approve\": true}'", node, id, b.run, id))
	case !approve:
		return journal.Refused("policy_refused", fmt.Sprintf("the decision %s declined node %q's tier step", id, node))
	}
	return nil
}
