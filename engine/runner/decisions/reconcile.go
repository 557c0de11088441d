package decisions

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/plant"
	"github.com/crw-dev/crw/internal/termtext"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// reconcile journals a verdict the run's live process was left: the node the unknown call
// holds is released for the calls after it. A verdict on a call that holds nothing here (not
// unknown, or reconciled already) is a warning row.
func (b *Book) reconcile(call string, a store.Answer) {
	var v Verdict
	b.mu.Lock()
	defer b.mu.Unlock()
	refuse := func(why string) {
		b.j.Append(refusal(journal.ReasonVerdictRefused, fmt.Sprintf("the verdict on %q: %s", termtext.Clip(call, 200), why), a))
		b.host.FlushSoon()
	}
	if len(a.Value) > MaxAnswer {
		refuse(fmt.Sprintf("the verdict is %d bytes long; the limit is %d", len(a.Value), MaxAnswer))
		return
	}
	if err := json.Unmarshal(a.Value, &v); err != nil || (v.Verdict != VerdictApplied && v.Verdict != VerdictNotApplied) {
		refuse("not a verdict")
		return
	}
	if len(v.Output) > 0 {
		// The output is read as an answer is (UTF-8, within its depth): the script is given it.
		if v.Verdict != VerdictApplied {
			refuse("only an applied verdict has an output")
			return
		}
		doc, _, err := schema.ParseAnswer(string(v.Output))
		if err != nil {
			refuse("its output: " + err.Error())
			return
		}
		v.Output = doc
	}
	if b.reconciled[call] {
		refuse("it was reconciled already")
		return
	}
	node := ""
	for n, calls := range b.unknown {
		if slices.Contains(calls, call) {
			node = n
		}
	}
	if node == "" {
		refuse("the call did not end unknown in this run")
		return
	}
	if b.host.Stopped() != nil {
		return
	}
	b.reconciled[call] = true
	if key, ok := b.unknownKeys[call]; ok && v.Verdict == VerdictApplied {
		if _, had := b.applied[key]; !had {
			b.applied[key] = call
		}
	}
	rest := slices.DeleteFunc(slices.Clone(b.unknown[node]), func(c string) bool { return c == call })
	if len(rest) == 0 {
		delete(b.unknown, node)
		delete(b.holds, node)
	} else {
		b.unknown[node], b.holds[node] = rest, rest[0]
	}
	row := ReconciledRow(call, v, a.By)
	b.j.Append(row)
	b.replay.Live(b.verdictDelivery(call, row))
	b.host.FlushSoon()
	b.host.PublishSoon()
}

// SetPost is vm.Poster's: the verdicts the journal has are handed to the script's loop in
// their recorded turn among the deliveries.
func (b *Book) SetPost(post func(func() error)) {
	b.post = post
	if b.h == nil {
		return
	}
	for call, c := range b.h.VerdictCalls {
		row := b.h.Reconciled[call]
		// In a turn of the loop's own, as in the process that journaled it: what the promises
		// it settles do comes before the results that process got after it.
		b.replay.RecordedInTurn(c, func(done func()) { b.postVerdict(call, row, done) })
	}
}

// verdictDelivery is a verdict's arrival at the script's loop: from then on crw.effect answers
// with it, and the promises waiting for it settle.
func (b *Book) verdictDelivery(call string, row *journal.Row) func() {
	return func() { b.postVerdict(call, row, nil) }
}

// postVerdict posts the verdict's arrival to the script's loop (verdictDelivery); done, when not
// nil, is called at the end of that turn, once the promises it settles are on their way.
func (b *Book) postVerdict(call string, row *journal.Row, done func()) {
	value := VerdictValue(call, row)
	if b.post == nil {
		return
	}
	b.comingMu.Lock()
	b.coming[call] = true
	b.comingMu.Unlock()
	b.post(func() error {
		b.mu.Lock()
		b.comingMu.Lock()
		delete(b.coming, call)
		b.comingMu.Unlock()
		b.verdicts[call] = value
		waits := b.effectWaits[call]
		// The script's recovery hold of the node is released with the verdict's arrival,
		// at its place among the deliveries: crw.commit and crw.tierStep answer the same on
		// every replay.
		if !plant.On(plant.VerdictKeepsHolds) {
			ReleaseTold(b.toldHolds, call)
		}
		delete(b.effectWaits, call)
		delete(b.waiting, EffectPrefix+call)
		b.mu.Unlock()
		for _, settle := range waits {
			settle(value, nil)
		}
		b.host.PublishSoon()
		if done != nil {
			done()
		}
		return nil
	})
}

// Effect is crw.effect: the verdict on a call the script was given as unknown, once it
// has reached the script's loop; until then the script waits for it as for a decision
// (effect/<call>), and a process with nothing else to wait for ends waiting_decision.
func (b *Book) Effect(call string, settle func(json.RawMessage, error)) error {
	status, known := b.host.Call(call)
	switch {
	case known && status == "":
		return errs.Throw(errs.InvalidRequest, "", "crw.effect: call %s has not ended: await its result first", call)
	case !known:
		return errs.Throw(errs.InvalidRequest, "", "crw.effect: %q names no call of this run", call)
	case status != journal.StatusUnknown:
		return errs.Throw(errs.InvalidRequest, "", "crw.effect: call %s ended %s: only a call that ended unknown gets a verdict", call, status)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if v, ok := b.verdicts[call]; ok {
		settle(v, nil)
		return nil
	}
	b.effectWaits[call] = append(b.effectWaits[call], settle)
	id := EffectPrefix + call
	if b.waiting[id] == nil {
		b.waiting[id] = &waiting{question: fmt.Sprintf("did the turn of call %s run? Give the verdict: crw flow recover %s %s --applied [--output @FILE], or --not-applied", call, b.run, call)}
	}
	b.host.PublishSoon()
	b.Kick()
	return nil
}

// ReleaseTold takes call out of the holds told (node → the calls whose unknown outcome the
// script was given and whose verdict has not reached it), as the verdict on call reaches the
// script: a runner's book and a shadow release them alike.
func ReleaseTold(told map[string][]string, call string) {
	for node, calls := range told {
		if rest := slices.DeleteFunc(slices.Clone(calls), func(c string) bool { return c == call }); len(rest) == 0 {
			delete(told, node)
		} else if len(rest) < len(calls) {
			told[node] = rest
		}
	}
}
