package runner

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/plant"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// EffectPrefix names an operator's verdict among the answers left for a live run's process:
// effect/<call>, its value a Verdict.
const EffectPrefix = journal.VerdictPrefix

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
		r.j.Append(journal.Warning{Reason: "verdict_refused", Detail: fmt.Sprintf("the verdict on %s: %s", call, why)}.Row())
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
	if key, ok := r.unknownKeys[call]; ok && v.Verdict == VerdictApplied {
		if _, had := r.applied[key]; !had {
			r.applied[key] = call
		}
	}
	rest := slices.DeleteFunc(slices.Clone(r.unknown[node]), func(c string) bool { return c == call })
	if len(rest) == 0 {
		delete(r.unknown, node)
		delete(r.holds, node)
	} else {
		r.unknown[node], r.holds[node] = rest, rest[0]
	}
	row := ReconciledRow(call, v, a.By)
	r.j.Append(row)
	r.replay.Live(r.verdictDelivery(call, row))
	r.flushSoon()
	r.progress.publishSoon()
}

// SetPost implements vm.Poster. The verdicts the journal has are handed to the script's loop in
// their recorded turn among the deliveries.
func (r *runner) SetPost(post func(func() error)) {
	r.post = post
	if r.h == nil {
		return
	}
	for call, c := range r.h.VerdictCalls {
		r.replay.Recorded(c, r.verdictDelivery(call, r.h.Reconciled[call]))
	}
}

// verdictDelivery is a verdict's arrival at the script's loop: from then on crw.effect answers
// with it, and the promises waiting for it settle.
func (r *runner) verdictDelivery(call string, row *journal.Row) func() {
	value := VerdictValue(call, row)
	return func() {
		if r.post == nil {
			return
		}
		r.post(func() error {
			r.mu.Lock()
			r.verdicts[call] = value
			waits := r.effectWaits[call]
			// The script's recovery hold of the node is released with the verdict's arrival,
			// at its place among the deliveries: crw.commit and crw.tierStep answer the same on
			// every replay.
			for node, told := range r.toldHolds {
				if plant.On(plant.VerdictKeepsHolds) {
					break
				}
				if rest := slices.DeleteFunc(slices.Clone(told), func(c string) bool { return c == call }); len(rest) < len(told) {
					if len(rest) == 0 {
						delete(r.toldHolds, node)
					} else {
						r.toldHolds[node] = rest
					}
				}
			}
			delete(r.effectWaits, call)
			delete(r.waiting, EffectPrefix+call)
			r.mu.Unlock()
			for _, settle := range waits {
				settle(value, nil)
			}
			r.progress.publishSoon()
			return nil
		})
	}
}

// VerdictValue is what crw.effect resolves to: {callId, verdict, output, by}, output null
// unless an applied verdict recorded one.
func VerdictValue(call string, row *journal.Row) json.RawMessage {
	out, _ := json.Marshal(struct {
		CallID  string          `json:"callId"`
		Verdict string          `json:"verdict"`
		Output  json.RawMessage `json:"output"`
		By      string          `json:"by"`
	}{call, row.Verdict, row.Output, row.By})
	return out
}

// Effect implements crw.Host: the verdict on a call the script was given as unknown, once it
// has reached the script's loop; until then the script waits for it as for a decision
// (effect/<call>), and a process with nothing else to wait for ends waiting_decision.
func (r *runner) Effect(call string, settle func(json.RawMessage, error)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.ended[call]
	switch {
	case e == nil && r.calls[call] != nil:
		return errs.Throw(errs.InvalidRequest, "", "crw.effect: call %s has not ended: await its result first", call)
	case e == nil:
		return errs.Throw(errs.InvalidRequest, "", "crw.effect: %q names no call of this run", call)
	case e.status != journal.StatusUnknown:
		return errs.Throw(errs.InvalidRequest, "", "crw.effect: call %s ended %s: only a call that ended unknown gets a verdict", call, e.status)
	}
	if v, ok := r.verdicts[call]; ok {
		settle(v, nil)
		return nil
	}
	r.effectWaits[call] = append(r.effectWaits[call], settle)
	id := EffectPrefix + call
	if r.waiting[id] == nil {
		r.waiting[id] = &waiting{question: fmt.Sprintf("did the turn of call %s run? Give the verdict: crw flow recover %s %s --applied [--output @FILE], or --not-applied", call, r.id, call)}
	}
	r.progress.publishSoon()
	r.kickAnswers()
	return nil
}
