// Package decisions is a live run's book of what it asked its owner and its operators: the
// script's decisions (crw.decide), tier steps' decisions, and the verdicts on calls whose
// outcome is unknown (crw.effect), with the holds those calls keep on their nodes. It journals
// each question and each answer it takes, delivers answers in their turn among the replay's
// deliveries, and tells the runner's gate what holds a call back.
//
// The Book has its own lock. The runner may call it while holding its own; the Book calls the
// runner (its Host) only without holding its lock, or through methods that take no lock of the
// runner's.
package decisions

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/runner/effects"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/internal/termtext"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// MaxDecisions bounds the decisions one run may ask; MaxAnswer an answer's JSON.
const (
	MaxDecisions = 1000
	MaxAnswer    = 1 << 20
)

// ReasonQuestionChanged is the reason of the warning row of a decision whose recorded answer
// was given to another question than the script asks now.
const ReasonQuestionChanged = "decision_question_changed"

// Host is the runner as the Book sees it. None of its methods may call the Book back.
type Host interface {
	// Stopped says why the run stopped for a reason it cannot go on with; nil while it goes on.
	Stopped() error
	// Stop stops the run's process for err (a divergence).
	Stop(err error)
	// FlushSoon makes the journal's rows durable soon; PublishSoon the run's status.
	FlushSoon()
	PublishSoon()
	// Call says of a call of the run whether it is known and, when it ended, its status
	// ("" while the script has not been given its result).
	Call(id string) (status journal.CallStatus, known bool)
}

// Config is what a Book is made of.
type Config struct {
	Run     string
	DryRun  bool            // a rehearsal: a decision is answered at once from its schema
	History *replay.History // nil for the run's first process
	Replay  *replay.Replayer
	Journal store.Journal
	// TakeAnswers takes the answers and verdicts left for the run while this process holds it.
	TakeAnswers func() ([]store.Answer, error)
	Host        Host
}

// Book is a live run's decisions and verdicts.
type Book struct {
	run    string
	dryRun bool
	h      *replay.History
	replay *replay.Replayer
	j      store.Journal
	take   func() ([]store.Answer, error)
	host   Host
	kick   chan struct{}
	post   func(func() error) // hands the script's loop a verdict's arrival in its turn

	mu       sync.Mutex
	asked    map[string]bool     // the decisions the script asked, by id
	waiting  map[string]*waiting // the decisions the script waits for
	stepAsks map[string]*stepAsk // tier steps' decisions (--tier-steps ask)
	taken    map[string]bool     // the decisions this process journaled an answer of

	reconciled map[string]bool     // the unknown calls a verdict decided
	unknown    map[string][]string // node → its unknown calls without a verdict
	holds      map[string]string   // node → the call whose unknown outcome holds it

	// applied are the effects an applied verdict proved happened, by key, and unknownKeys the
	// keys of the calls that ended unknown: a call asking for an applied effect again is not
	// sent (AppliedBy).
	applied     map[replay.EffectKey]string
	unknownKeys map[string]replay.EffectKey

	// The verdicts that reached the script's loop (crw.effect answers from them, so a replay
	// answers as the recorded run did), and the crw.effect promises waiting for one.
	verdicts    map[string]json.RawMessage
	effectWaits map[string][]func(json.RawMessage, error)
	// coming are the verdicts handed to the script's loop and not yet taken there. The script
	// still waits for them (crw.effect answers at the loop's turn), but not for nothing: a
	// process whose script idles meanwhile goes on to take them. Its own lock, taken after mu
	// when both are: a verdict is handed over from within the replay's deliveries, which may
	// run while mu is held.
	comingMu sync.Mutex
	coming   map[string]bool
	// toldHolds are, by node, the calls whose unknown outcome the script has received and whose
	// verdict has not reached it: what crw.tierStep and crw.commit answer from, so a replay
	// answers as the recorded run did.
	toldHolds map[string][]string
}

// waiting is a decision the script waits for.
type waiting struct {
	settle    func(json.RawMessage, error)
	validator *schema.Validator
	question  string
}

// stepAsk is a tier step's decision: answered, and whether it approved the step.
type stepAsk struct{ answered, approve bool }

// New returns the Book of a run's process: what its history recorded is taken as given.
func New(cfg Config) *Book {
	b := &Book{
		run: cfg.Run, dryRun: cfg.DryRun, h: cfg.History, replay: cfg.Replay, j: cfg.Journal,
		take: cfg.TakeAnswers, host: cfg.Host, kick: make(chan struct{}, 1),
		asked: map[string]bool{}, waiting: map[string]*waiting{}, stepAsks: map[string]*stepAsk{}, taken: map[string]bool{},
		reconciled: map[string]bool{}, unknown: map[string][]string{}, holds: map[string]string{},
		applied: map[replay.EffectKey]string{}, unknownKeys: map[string]replay.EffectKey{},
		verdicts: map[string]json.RawMessage{}, effectWaits: map[string][]func(json.RawMessage, error){}, coming: map[string]bool{},
		toldHolds: map[string][]string{},
	}
	h := cfg.History
	if h == nil {
		return b
	}
	for call := range h.Reconciled {
		b.reconciled[call] = true
	}
	for node, calls := range h.Unknown {
		b.unknown[node] = slices.Clone(calls)
	}
	maps.Copy(b.applied, h.Applied)
	maps.Copy(b.unknownKeys, h.UnknownKeys)
	maps.Copy(b.holds, h.Holds)
	for _, ts := range h.TierSteps {
		if ts.DecisionID == "" {
			continue
		}
		ask := &stepAsk{}
		if d := h.Decisions[ts.DecisionID]; d != nil && d.Answer != nil {
			ask.answered, ask.approve = true, approves(d.Answer.Output)
		}
		b.stepAsks[ts.DecisionID] = ask
	}
	return b
}

// answeredLocked reports whether this process took an answer to id, or the journal has one.
func (b *Book) answeredLocked(id string) bool {
	if b.taken[id] {
		return true
	}
	if b.h != nil {
		if d := b.h.Decisions[id]; d != nil && d.Answer != nil {
			return true
		}
	}
	return false
}

// Kick makes the answers loop look at once.
func (b *Book) Kick() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// answersEvery is how often a run that waits for a decision looks for answers.
const answersEvery = 200 * time.Millisecond

// Loop takes the answers left for the run (crw flow answer, while this process holds it) for
// as long as the run goes on.
func (b *Book) Loop() (stop func()) {
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
			case <-b.kick:
			}
			b.Take()
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// Take journals and delivers the answers waiting for this process. An answer that fits no
// decision the script waits for, or not its schema, is a warning row and is dropped. A process
// that stopped takes none: it journals nothing more, and the answers are left for the process
// that resumes the run.
func (b *Book) Take() {
	if b.host.Stopped() != nil {
		return
	}
	b.mu.Lock()
	idle := len(b.waiting) == 0
	for _, ask := range b.stepAsks {
		idle = idle && ask.answered
	}
	idle = idle && len(b.holds) == 0 // a verdict on an unknown outcome may come too
	b.mu.Unlock()
	if idle {
		return
	}
	answers, err := b.take()
	if err != nil {
		b.j.Append(journal.Warning{Reason: "answers_unreadable", Detail: err.Error()}.Row())
		return
	}
	for _, a := range answers {
		b.answer(a)
	}
}

func (b *Book) answer(a store.Answer) {
	if call, ok := strings.CutPrefix(a.ID, EffectPrefix); ok {
		b.reconcile(call, a)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.waiting[a.ID]
	refuse := func(why string) {
		b.j.Append(refusal(journal.ReasonAnswerRefused, fmt.Sprintf("the answer to %q: %s", termtext.Clip(a.ID, 200), why), a))
		b.host.FlushSoon()
	}
	ask := b.stepAsks[a.ID]
	if w == nil && ask != nil && !ask.answered {
		v, err := schema.Compile([]byte(effects.ApproveSchema))
		if err != nil {
			return
		}
		w = &waiting{settle: func(json.RawMessage, error) {}, validator: v}
	}
	if w == nil {
		if b.answeredLocked(a.ID) {
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
	if b.host.Stopped() != nil {
		return
	}
	delete(b.waiting, a.ID)
	b.taken[a.ID] = true
	value := journal.Canonical(doc)
	if ask != nil {
		ask.answered, ask.approve = true, approves(value)
	}
	b.j.Append(journal.DecisionAnswered{ID: a.ID, Output: value, By: a.By}.Row())
	b.replay.Live(func() { w.settle(value, nil) })
	b.host.FlushSoon()
	b.host.PublishSoon()
}

// Waiting reports whether the script waits for a decision or a verdict that nothing is
// bringing: a verdict handed to the script's loop and not yet taken there is on its way.
func (b *Book) Waiting() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.comingMu.Lock()
	defer b.comingMu.Unlock()
	for id := range b.waiting {
		if call, ok := strings.CutPrefix(id, EffectPrefix); !ok || !b.coming[call] {
			return true
		}
	}
	return false
}

// refusal is the warning row of an answer (or a verdict) the run refuses: it names the
// answer's id, author and value (by digest), for the one who left it to know it.
func refusal(reason, detail string, a store.Answer) *journal.Row {
	w := journal.Warning{Reason: reason, Detail: detail, By: termtext.Clip(a.By, 200), OutputDigest: journal.Digest(string(journal.Canonical(a.Value)))}
	if len(a.ID) <= maxAnswerID {
		w.DecisionID = a.ID
	}
	return w.Row()
}

// maxAnswerID bounds the id a refusal row names: an id past it names no decision or call a
// run has.
const maxAnswerID = 1024

// approves reads a tier step decision's answer.
func approves(v json.RawMessage) bool {
	var a struct {
		Approve bool `json:"approve"`
	}
	return json.Unmarshal(v, &a) == nil && a.Approve
}

// Pending lists the decisions the script waits for, by id.
func (b *Book) Pending() []journal.PendingDecision {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]journal.PendingDecision, 0, len(b.waiting))
	for id, w := range b.waiting {
		out = append(out, journal.PendingDecision{ID: id, Question: w.question})
	}
	slices.SortFunc(out, func(a, b journal.PendingDecision) int { return strings.Compare(a.ID, b.ID) })
	return out
}
