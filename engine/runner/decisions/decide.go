package decisions

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/plant"
	"github.com/crw-dev/crw/internal/termtext"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/runtime/modules/crw"
)

// Decide is crw.decide: the decision is journaled (decision_requested) and the script's
// promise settles with its answer. An answer the journal has reaches the script at its place
// among the recorded results; one that comes while this process runs is journaled by it
// (decision_answered) and delivered as a call's result is. A script that waits for nothing
// but decisions ends its process: the run waits (waiting_decision) for crw flow answer.
func (b *Book) Decide(d crw.Decision, settle func(json.RawMessage, error)) error {
	if problems := inputs.CheckSchema(d.Schema); len(problems) > 0 {
		p := problems[0]
		return errs.Throw(errs.InvalidRequest, "schema_not_strict", "crw.decide %q: the schema is not strict: at %q: %s", d.ID, p.Pointer, p.Message)
	}
	v, err := schema.Compile(d.Schema)
	if err != nil {
		return errs.Throw(errs.InvalidRequest, "schema_not_strict", "crw.decide %q: the schema: %v", d.ID, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.asked[d.ID] {
		return errs.Throw(errs.InvalidRequest, "", "crw.decide: decision %q was asked already in this run: give each decision an id of its own", d.ID)
	}
	if len(b.asked) >= MaxDecisions {
		return errs.Throw(errs.BudgetExhausted, "", "crw.decide: the run has asked %d decisions, the most one run may", MaxDecisions)
	}
	if strings.HasPrefix(d.ID, EffectPrefix) {
		return errs.Throw(errs.InvalidRequest, "", "crw.decide: the id %q is reserved: ids under %s are operators' verdicts", d.ID, EffectPrefix)
	}
	if strings.HasPrefix(d.ID, "tier-step/") && b.stepAsks[d.ID] == nil {
		return errs.Throw(errs.InvalidRequest, "", "crw.decide: the id %q is a tier step's (ids under tier-step/ are): wait for a step's decision by the id crw.tierStep returned", d.ID)
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
		b.waiting[d.ID] = &waiting{settle: settle, validator: v, question: d.Question}
		b.Kick()
		return nil
	}
	if b.h != nil {
		if rec := b.h.Decisions[d.ID]; rec != nil {
			// A decision is its id and its schema: the answer is checked against the schema,
			// and the question is only what the owner is shown. A question built from a
			// result that a resume got anew (a call a pause held, run again) may read
			// otherwise; it is shown, not taken for another path.
			if rec.Request.Node == "" && !journal.SameJSON(rec.Request.Schema, d.Schema) {
				div := fmt.Errorf("crw.decide %q: the script asks with another schema than the journal recorded", d.ID)
				b.host.Stop(errs.New(errs.RevisionConflict, "run %s: %v", b.run, div).Because("replay", "divergence", "stopped", errs.Certain).
					Next("resume it with the script it was recorded with; crw flow shadow shows what changed"))
				return errs.Throw(errs.RevisionConflict, "divergence", "%v", div)
			}
			changed := rec.Request.Node == "" && rec.Request.Question != d.Question
			if changed && plant.On(plant.DecisionByQuestion) {
				div := fmt.Errorf("crw.decide %q: the script asks another question than the journal recorded", d.ID)
				b.host.Stop(errs.New(errs.RevisionConflict, "run %s: %v", b.run, div).Because("replay", "divergence", "stopped", errs.Certain).
					Next("resume it with the script it was recorded with; crw flow shadow shows what changed"))
				return errs.Throw(errs.RevisionConflict, "divergence", "%v", div)
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
				b.j.Append(journal.DecisionRequested{ID: d.ID, Question: d.Question, Schema: d.Schema}.Row())
				b.host.FlushSoon()
				b.host.PublishSoon()
			}
			b.waiting[d.ID] = &waiting{settle: settle, validator: v, question: d.Question}
			b.Kick()
			return nil
		}
	}
	b.j.Append(journal.DecisionRequested{ID: d.ID, Question: d.Question, Schema: d.Schema}.Row())
	b.waiting[d.ID] = &waiting{settle: settle, validator: v, question: d.Question}
	b.host.FlushSoon()
	b.host.PublishSoon()
	b.Kick()
	return nil
}
