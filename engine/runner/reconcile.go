package runner

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// EffectPrefix names an operator's verdict among the answers left for a live run's process:
// effect/<call>, its value a Verdict.
const EffectPrefix = "effect/"

// Verdict is an operator's word on a call whose outcome is unknown (crw flow recover).
type Verdict struct {
	Verdict string          `json:"verdict"` // applied or not_applied
	Output  json.RawMessage `json:"output,omitempty"`
}

// Verdicts an operator may give.
const (
	VerdictApplied    = "applied"
	VerdictNotApplied = "not_applied"
)

// ReconciledRow is the effect_reconciled row of a verdict on call.
func ReconciledRow(call string, v Verdict, by string) *journal.Row {
	row := &journal.Row{Type: journal.TypeEffectReconciled, Effect: call, Verdict: v.Verdict, By: by}
	if len(v.Output) > 0 {
		row.Output = canonical(v.Output)
		row.OutputDigest = replay.Digest(string(row.Output))
	}
	return row
}

// reconcile journals a verdict the run's live process was left: the node the unknown call
// holds is released for the calls after it. A verdict on a call that holds nothing here (not
// unknown, or reconciled already) is a warning row.
func (r *runner) reconcile(call string, a store.Answer) {
	var v Verdict
	r.mu.Lock()
	defer r.mu.Unlock()
	refuse := func(why string) {
		r.j.Append(&journal.Row{Type: journal.TypeWarning, Reason: "verdict_refused", Detail: fmt.Sprintf("the verdict on %s: %s", call, why)})
		r.flushSoon()
	}
	if err := json.Unmarshal(a.Value, &v); err != nil || (v.Verdict != VerdictApplied && v.Verdict != VerdictNotApplied) {
		refuse("not a verdict")
		return
	}
	if r.reconciled[call] {
		refuse("it was reconciled already")
		return
	}
	node := ""
	for n, calls := range r.unknown {
		if slices.Contains(calls, call) {
			node = n
		}
	}
	if node == "" {
		refuse("the call did not end unknown in this run")
		return
	}
	if r.stopped() != nil {
		return
	}
	r.reconciled[call] = true
	rest := slices.DeleteFunc(slices.Clone(r.unknown[node]), func(c string) bool { return c == call })
	if len(rest) == 0 {
		delete(r.unknown, node)
		delete(r.holds, node)
	} else {
		r.unknown[node], r.holds[node] = rest, rest[0]
	}
	r.j.Append(ReconciledRow(call, v, a.By))
	r.flushSoon()
	r.progress.publishSoon()
}
