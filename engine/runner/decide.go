package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/engine/runner/effects"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/plant"
	"github.com/crw-dev/crw/internal/termtext"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/runtime/modules/crw"
	"github.com/crw-dev/crw/store"
)

// MaxDecisions bounds the decisions one run may ask; MaxAnswer an answer's JSON.
const (
	MaxDecisions = 1000
	MaxAnswer    = 1 << 20
)

// answered reports whether this process took an answer to id, or the journal has one.
func (r *runner) answered(id string) bool {
	if r.taken[id] {
		return true
	}
	if r.h != nil {
		if d := r.h.Decisions[id]; d != nil && d.Answer != nil {
			return true
		}
	}
	return false
}

// ReasonQuestionChanged is the reason of the warning row of a decision whose recorded answer
// was given to another question than the script asks now.
const ReasonQuestionChanged = "decision_question_changed"

// ReasonProcessLockUnavailable is the reason of the warning row of a process that holds its run
// without a process lock of its own.
const ReasonProcessLockUnavailable = "process_lock_unavailable"

// errWaitingDecision is the cause of a process's end when its script waits for nothing but
// decisions: the run is not over, and crw flow answer resumes it.
var errWaitingDecision = errors.New("the run waits for a decision")

// waiting is a decision the script waits for.
type waiting struct {
	settle    func(json.RawMessage, error)
	validator *schema.Validator
	question  string
}

// Decide implements crw.Host: the decision is journaled (decision_requested) and the script's
// promise settles with its answer. An answer the journal has reaches the script at its place
// among the recorded results; one that comes while this process runs is journaled by it
// (decision_answered) and delivered as a call's result is. A script that waits for nothing
// but decisions ends its process: the run waits (waiting_decision) for crw flow answer.
func (r *runner) Decide(d crw.Decision, settle func(json.RawMessage, error)) error {
	if problems := inputs.CheckSchema(d.Schema); len(problems) > 0 {
		p := problems[0]
		return errs.Throw(errs.InvalidRequest, "schema_not_strict", "crw.decide %q: the schema is not strict: at %q: %s", d.ID, p.Pointer, p.Message)
	}
	v, err := schema.Compile(d.Schema)
	if err != nil {
		return errs.Throw(errs.InvalidRequest, "schema_not_strict", "crw.decide %q: the schema: %v", d.ID, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.asked[d.ID] {
		return errs.Throw(errs.InvalidRequest, "", "crw.decide: decision %q was asked already in this run: give each decision an id of its own", d.ID)
	}
	if len(r.asked) >= MaxDecisions {
		return errs.Throw(errs.BudgetExhausted, "", "crw.decide: the run has asked %d decisions, the most one run may", MaxDecisions)
	}
	if strings.HasPrefix(d.ID, EffectPrefix) {
		return errs.Throw(errs.InvalidRequest, "", "crw.decide: the id %q is reserved: ids under %s are operators' verdicts", d.ID, EffectPrefix)
	}
	if strings.HasPrefix(d.ID, "tier-step/") && r.stepAsks[d.ID] == nil {
		return errs.Throw(errs.InvalidRequest, "", "crw.decide: the id %q is a tier step's (ids under tier-step/ are): wait for a step's decision by the id crw.tierStep returned", d.ID)
	}
	r.asked[d.ID] = true
	if r.dryRun {
		// A rehearsal asks nobody: an answer its schema admits comes at once.
		answer, err := schema.Synthesize(d.Schema)
		if err != nil {
			return errs.Throw(errs.InvalidRequest, "schema_not_strict", "crw.decide %q: no answer can be made for its schema: %v", d.ID, err)
		}
		r.replay.Live(func() { settle(answer, nil) })
		return nil
	}
	if ask := r.stepAsks[d.ID]; ask != nil && (r.h == nil || r.h.Decisions[d.ID] == nil) {
		// The decision a tier step of this process asked: the script waits for it too.
		if ask.answered {
			return errs.Throw(errs.InvalidRequest, "", "crw.decide %q: the tier step's decision is answered already", d.ID)
		}
		r.waiting[d.ID] = &waiting{settle: settle, validator: v, question: d.Question}
		r.kickAnswers()
		return nil
	}
	if r.h != nil {
		if rec := r.h.Decisions[d.ID]; rec != nil {
			// A decision is its id and its schema: the answer is checked against the schema,
			// and the question is only what the owner is shown. A question built from a
			// result that a resume got anew (a call a pause held, run again) may read
			// otherwise; it is shown, not taken for another path.
			if rec.Request.Node == "" && !journal.SameJSON(rec.Request.Schema, d.Schema) {
				div := fmt.Errorf("crw.decide %q: the script asks with another schema than the journal recorded", d.ID)
				r.fail(failure{errs.New(errs.RevisionConflict, "run %s: %v", r.id, div).Because("replay", "divergence", "stopped", errs.Certain).
					Next("resume it with the script it was recorded with; crw flow shadow shows what changed")})
				return errs.Throw(errs.RevisionConflict, "divergence", "%v", div)
			}
			changed := rec.Request.Node == "" && rec.Request.Question != d.Question
			if changed && plant.On(plant.DecisionByQuestion) {
				div := fmt.Errorf("crw.decide %q: the script asks another question than the journal recorded", d.ID)
				r.fail(failure{errs.New(errs.RevisionConflict, "run %s: %v", r.id, div).Because("replay", "divergence", "stopped", errs.Certain).
					Next("resume it with the script it was recorded with; crw flow shadow shows what changed")})
				return errs.Throw(errs.RevisionConflict, "divergence", "%v", div)
			}
			if rec.Answer != nil {
				if changed {
					r.j.Append(&journal.Row{Type: journal.TypeWarning, Reason: ReasonQuestionChanged, DecisionID: d.ID, Question: d.Question,
						Detail: fmt.Sprintf("crw.decide %q now asks %q; the answer recorded was given to %q", d.ID, termtext.Clip(d.Question, 80), termtext.Clip(rec.Request.Question, 80))})
					r.flushSoon()
				}
				answer := rec.Answer.Output
				r.replay.Recorded(rec.Call, func() { settle(answer, nil) })
				return nil
			}
			if changed {
				// Asked again with the question as it reads now: status shows that one.
				r.j.Append(&journal.Row{Type: journal.TypeDecisionRequested, DecisionID: d.ID, Question: d.Question, Schema: d.Schema})
				r.flushSoon()
				r.progress.publishSoon()
			}
			r.waiting[d.ID] = &waiting{settle: settle, validator: v, question: d.Question}
			r.kickAnswers()
			return nil
		}
	}
	r.j.Append(&journal.Row{Type: journal.TypeDecisionRequested, DecisionID: d.ID, Question: d.Question, Schema: d.Schema})
	r.waiting[d.ID] = &waiting{settle: settle, validator: v, question: d.Question}
	r.flushSoon()
	r.progress.publishSoon()
	r.kickAnswers()
	return nil
}

// kickAnswers makes the answers loop look at once.
func (r *runner) kickAnswers() {
	select {
	case r.answersKick <- struct{}{}:
	default:
	}
}

// answersEvery is how often a run that waits for a decision looks for answers.
const answersEvery = 200 * time.Millisecond

// answersLoop takes the answers left for the run (crw flow answer, while this process holds
// it) for as long as the run goes on.
func (r *runner) answersLoop() (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(answersEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			case <-r.answersKick:
			}
			r.takeAnswers()
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// takeAnswers journals and delivers the answers waiting for this process. An answer that fits
// no decision the script waits for, or not its schema, is a warning row and is dropped.
func (r *runner) takeAnswers() {
	r.mu.Lock()
	idle := len(r.waiting) == 0
	for _, ask := range r.stepAsks {
		idle = idle && ask.answered
	}
	idle = idle && len(r.holds) == 0 // a verdict on an unknown outcome may come too
	r.mu.Unlock()
	if idle {
		return
	}
	answers, err := r.lease.TakeAnswers()
	if err != nil {
		r.j.Append(journal.Warning{Reason: "answers_unreadable", Detail: err.Error()}.Row())
		return
	}
	for _, a := range answers {
		r.answer(a)
	}
}

func (r *runner) answer(a store.Answer) {
	if call, ok := strings.CutPrefix(a.ID, EffectPrefix); ok {
		r.reconcile(call, a)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.waiting[a.ID]
	refuse := func(why string) {
		r.j.Append(journal.Warning{Reason: "answer_refused", Detail: fmt.Sprintf("the answer to %q: %s", a.ID, why)}.Row())
		r.flushSoon()
	}
	ask := r.stepAsks[a.ID]
	if w == nil && ask != nil && !ask.answered {
		v, err := schema.Compile([]byte(effects.ApproveSchema))
		if err != nil {
			return
		}
		w = &waiting{settle: func(json.RawMessage, error) {}, validator: v}
	}
	if w == nil {
		if r.answered(a.ID) {
			refuse("the decision was answered already")
		} else {
			refuse("the run waits for no such decision")
		}
		return
	}
	if len(a.Value) > MaxAnswer {
		refuse(fmt.Sprintf("the answer is %d bytes long; the limit is %d", len(a.Value), MaxAnswer))
		return
	}
	doc, _, err := schema.ParseAnswer(string(a.Value))
	if err == nil {
		err = w.validator.Validate(doc)
	}
	if err != nil {
		refuse(err.Error())
		return
	}
	if r.stopped() != nil {
		return
	}
	delete(r.waiting, a.ID)
	r.taken[a.ID] = true
	value := canonical(doc)
	if ask != nil {
		ask.answered, ask.approve = true, approves(value)
	}
	r.j.Append(&journal.Row{Type: journal.TypeDecisionAnswered, DecisionID: a.ID, Output: value, By: a.By})
	r.replay.Live(func() { w.settle(value, nil) })
	r.flushSoon()
	r.progress.publishSoon()
}

// waitsOnlyForDecisions reports whether the script can get nothing but decisions' answers:
// no call of it is unsettled and the record has nothing left to give.
func (r *runner) waitsOnlyForDecisions() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.waiting) > 0 && len(r.calls) == 0 && !r.replay.Due()
}

// approves reads a tier step decision's answer.
func approves(v json.RawMessage) bool {
	var a struct {
		Approve bool `json:"approve"`
	}
	return json.Unmarshal(v, &a) == nil && a.Approve
}

// pendingLocked lists the decisions the script waits for, by id.
func (r *runner) pendingLocked() []journal.PendingDecision {
	out := make([]journal.PendingDecision, 0, len(r.waiting))
	for id, w := range r.waiting {
		out = append(out, journal.PendingDecision{ID: id, Question: w.question})
	}
	slices.SortFunc(out, func(a, b journal.PendingDecision) int { return strings.Compare(a.ID, b.ID) })
	return out
}
