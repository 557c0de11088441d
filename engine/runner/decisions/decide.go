package decisions

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/runner/effects"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/plant"
	"github.com/crw-dev/crw/internal/termtext"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/runtime/modules/crw"
)

// CheckAsk is what crw.decide refuses before anything is asked, a replay's as a run's: a
// schema that is not strict, an id the run asked already (asked), more decisions than a run
// may ask, an id reserved for operators' verdicts, and a tier step's id no tier step of the
// run asked (stepAsked). It returns the validator of the decision's answers.
func CheckAsk(d crw.Decision, asked map[string]bool, stepAsked bool) (*schema.Validator, error) {
	if problems := inputs.CheckSchema(d.Schema); len(problems) > 0 {
		p := problems[0]
		return nil, errs.Throw(errs.InvalidRequest, "schema_not_strict", "crw.decide %q: the schema is not strict: at %q: %s", d.ID, p.Pointer, p.Message)
	}
	v, err := schema.Compile(d.Schema)
	if err != nil {
		return nil, errs.Throw(errs.InvalidRequest, "schema_not_strict", "crw.decide %q: the schema: %v", d.ID, err)
	}
	switch {
	case asked[d.ID]:
		return nil, errs.Throw(errs.InvalidRequest, "", "crw.decide: decision %q was asked already in this run: give each decision an id of its own", d.ID)
	case len(asked) >= MaxDecisions:
		return nil, errs.Throw(errs.BudgetExhausted, "", "crw.decide: the run has asked %d decisions, the most one run may", MaxDecisions)
	case strings.HasPrefix(d.ID, EffectPrefix):
		return nil, errs.Throw(errs.InvalidRequest, "", "crw.decide: the id %q is reserved: ids under %s are operators' verdicts", d.ID, EffectPrefix)
	case strings.HasPrefix(d.ID, TierStepPrefix) && !stepAsked:
		return nil, errs.Throw(errs.InvalidRequest, "", "crw.decide: the id %q is a tier step's (ids under %s are): wait for a step's decision by the id crw.tierStep returned", d.ID, TierStepPrefix)
	}
	return v, nil
}

// TierStepPrefix names the decisions tier steps ask (--tier-steps ask).
const TierStepPrefix = "tier-step/"

// SchemaChanged is the divergence of a crw.decide whose schema is not the one the journal
// recorded for its id: a decision is its id and its schema.
func SchemaChanged(rec *journal.Row, d crw.Decision) error {
	if rec.Node != "" || journal.SameJSON(rec.Schema, d.Schema) {
		return nil
	}
	return fmt.Errorf("crw.decide %q: the script asks with another schema than the journal recorded", d.ID)
}

// Decide is crw.decide: the decision is journaled (decision_requested) and the script's
// promise settles with its answer. An answer the journal has reaches the script at its place
// among the recorded results; one that comes while this process runs is journaled by it
// (decision_answered) and delivered as a call's result is. A script that waits for nothing
// but decisions ends its process: the run waits (waiting_decision) for crw flow answer.
func (b *Book) Decide(d crw.Decision, settle func(json.RawMessage, error)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, err := CheckAsk(d, b.asked, b.stepAsks[d.ID] != nil)
	if err != nil {
		return err
	}
	b.asked[d.ID] = true
	if b.dryRun {
		// A rehearsal asks nobody: an answer its schema admits comes at once.
		answer, err := schema.Synthesize(d.Schema)
		if err != nil {
			return errs.Throw(errs.InvalidRequest, "schema_not_strict", "crw.decide %q: no answer can be made for its schema: %v", d.ID, err)
		}
		b.replay.Live(func() { settle(answer, nil) })
		return nil
	}
	if ask := b.stepAsks[d.ID]; ask != nil && (b.h == nil || b.h.Decisions[d.ID] == nil) {
		// The decision a tier step of this process asked: the script waits for it too.
		if ask.answered {
			return errs.Throw(errs.InvalidRequest, "", "crw.decide %q: the tier step's decision is answered already", d.ID)
		}
		b.await(d, v, settle)
		return nil
	}
	if b.h != nil {
		if rec := b.h.Decisions[d.ID]; rec != nil {
			return b.recorded(rec, d, v, settle)
		}
	}
	b.ask(d, v, settle)
	return nil
}

// recorded is crw.decide of a decision the journal has asked.
func (b *Book) recorded(rec *replay.Decision, d crw.Decision, v *schema.Validator, settle func(json.RawMessage, error)) error {
	// A decision is its id and its schema: the answer is checked against the schema, and the
	// question is only what the owner is shown. A question built from a result that a resume
	// got anew (a call a pause held, run again) may read otherwise; it is shown, not taken for
	// another path.
	if div := SchemaChanged(rec.Request, d); div != nil {
		if !b.askedPastTheRecord(rec) {
			b.host.Stop(effects.DivergenceStop(b.run, div))
			return effects.DivergenceThrown(div)
		}
		// The process that asked it had a result a pause held, and this one ran the call
		// again: asked anew, with the schema the script builds now. An answer the record has
		// was given to the other one.
		b.ask(d, v, settle)
		return nil
	}
	changed := rec.Request.Node == "" && rec.Request.Question != d.Question
	if changed && plant.On(plant.DecisionByQuestion) {
		div := fmt.Errorf("crw.decide %q: the script asks another question than the journal recorded", d.ID)
		b.host.Stop(effects.DivergenceStop(b.run, div))
		return effects.DivergenceThrown(div)
	}
	if rec.Answer != nil {
		if changed {
			b.j.Append(journal.Warning{Reason: ReasonQuestionChanged, DecisionID: d.ID, Question: d.Question,
				Detail: fmt.Sprintf("crw.decide %q now asks %q; the answer recorded was given to %q", d.ID, termtext.Clip(d.Question, 80), termtext.Clip(rec.Request.Question, 80))}.Row())
			b.host.FlushSoon()
		}
		answer := rec.Answer.Output
		b.replay.Recorded(rec.Call, func() { settle(answer, nil) })
		return nil
	}
	if changed {
		// Asked again with the question as it reads now: status shows that one.
		b.ask(d, v, settle)
		return nil
	}
	b.await(d, v, settle)
	return nil
}

// ask journals the decision's request (decision_requested) and has the script wait for its
// answer.
func (b *Book) ask(d crw.Decision, v *schema.Validator, settle func(json.RawMessage, error)) {
	b.j.Append(journal.DecisionRequested{ID: d.ID, Question: d.Question, Schema: d.Schema}.Row())
	b.host.FlushSoon()
	b.host.PublishSoon()
	b.await(d, v, settle)
}

// await has the script wait for the decision's answer.
func (b *Book) await(d crw.Decision, v *schema.Validator, settle func(json.RawMessage, error)) {
	b.waiting[d.ID] = &waiting{settle: settle, validator: v, question: d.Question}
	b.Kick()
}

// AskedPastTheRecord reports whether decision d was asked by a process a pause held calls in,
// once it had a held result (History.PauseHeldFrom): where a process that runs such a call
// again leaves the record (replay.Replayer.LeftAt, History.SupersededBy), or an earlier one
// did (Decision.Left). A process that left there asks it with the rerun's result.
func AskedPastTheRecord(h *replay.History, d *replay.Decision, leftAt uint64, left bool) bool {
	return d.Left || (left && h != nil && h.SupersededBy(d.Request.Seq, leftAt))
}

func (b *Book) askedPastTheRecord(d *replay.Decision) bool {
	if plant.On(plant.DecisionNotAskedAnew) {
		return false
	}
	at, left := uint64(0), false
	if b.replay != nil {
		at, left = b.replay.LeftAt()
	}
	return AskedPastTheRecord(b.h, d, at, left)
}
