// Package shadow replays a script, changed or not, against a recorded run with no backend at
// all, and reports every difference. It is another host around engine/replay's Replayer, the
// component a resumed run delivers recorded results through: here it aligns calls with the
// record instead of stopping at the first difference, and a call the record cannot answer
// resolves held, so the script goes on.
package shadow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/result"
	"github.com/crw-dev/crw/engine/runner"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/engine/runner/effects"
	"github.com/crw-dev/crw/engine/runner/ends"
	"github.com/crw-dev/crw/engine/runner/scriptlog"
	"github.com/crw-dev/crw/engine/runspec"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/plant"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/lib"
	"github.com/crw-dev/crw/runtime/loader"
	"github.com/crw-dev/crw/runtime/modules/agent"
	"github.com/crw-dev/crw/runtime/modules/crw"
	"github.com/crw-dev/crw/runtime/vm"
	"github.com/crw-dev/crw/store"
)

// Options is a shadow replay: a script run against a recorded run.
type Options struct {
	Script string
	Rows   []journal.Row // the recorded run (a trace read whole), when History is nil
	// History is the recorded run read from its journal, or from Trace (replay.ReadPages).
	History *replay.History
	// Trace is the trace History was read from (ReadTrace), which it reads again as it needs;
	// nil for a run's journal.
	Trace   *journal.TraceFile
	LibDirs []string
	Log     io.Writer // the script's console
	// Limits are the run's (its spec's), which the script ran within: a deeper recursion or a
	// longer prompt than the defaults allow takes the path it took. nil: the defaults (a trace
	// does not carry them).
	Limits *store.Limits
	// NoRepository is a recorded run without a repository: crw.commit throws in its shadow as
	// in the run (effects.NoRepository). A run's shadow knows it from the run's spec; a trace
	// does not say, and its shadow is told.
	NoRepository bool
}

// Report is what a shadow replay found.
type Report struct {
	Run         string            `json:"run"`
	Backend     string            `json:"backend"`
	Script      string            `json:"script"`
	Recorded    int               `json:"recorded"` // calls in the recorded run
	Matched     int               `json:"matched"`
	Divergences []Divergence      `json:"divergences"`
	Unmade      []Call            `json:"unmade"` // recorded calls the script never made
	New         []Call            `json:"new"`    // calls the recorded run does not have
	Status      store.RunStatus   `json:"status"` // the script's end: completed or failed
	Result      json.RawMessage   `json:"result"`
	Error       *journal.RunError `json:"error"`
	// Stop is the divergence at an effect (a commit, a tier step or a decision asked otherwise
	// than the record has at its place) at which the script stopped, as its run stops there
	// (Error says so too); nil when it did not.
	Stop error `json:"-"`
	// OffRecord is the position of the first call the script made that a pause held in the
	// record: a resume runs it again, and from there what the script asks is its own, not
	// compared with the record (0: none).
	OffRecord int `json:"-"`
	// WaitsFrom is the position of the first call the script had not made when it waited for
	// nothing but decisions the record has no answer to: a resume lets its process go there,
	// and what the script does once it has the answers depends on them (0: it never did).
	// StopAfterWait: the script stopped after that (having caught the rejection).
	WaitsFrom     int  `json:"-"`
	StopAfterWait bool `json:"-"`
}

// Differs reports whether the script made anything but exactly the recorded calls, or stopped
// at an effect asked otherwise than the record's.
func (r *Report) Differs() bool {
	return len(r.Divergences)+len(r.Unmade)+len(r.New) > 0 || r.Stop != nil
}

// Divergence is a call whose inputs differ from the recorded call it was aligned with.
type Divergence struct {
	Position int                `json:"position"` // 1-based issue order
	Call     string             `json:"call"`     // the recorded call's id
	Node     string             `json:"node"`
	Fields   []replay.FieldDiff `json:"fields"`
	Diff     string             `json:"diff,omitempty"` // a short diff of the prompts
}

// Call names a call in a report.
type Call struct {
	Position int    `json:"position"`
	Call     string `json:"call,omitempty"`
	Role     string `json:"role"`
	Node     string `json:"node"`
	Prompt   string `json:"prompt"`
	Site     string `json:"site,omitempty"`
}

// Warm starts compiling the script opts names, for a Run of it to find compiled (vm.Warm): the
// caller reads the run's journal meanwhile.
func Warm(opts Options) {
	vm.Warm(vm.Config{Workflow: opts.Script, LibDirs: opts.LibDirs, Builtin: lib.FS})
}

// ReadTrace reads the History of the trace t a part at a time, as a run's shadow reads its
// journal: what it keeps of the calls' rows is bounded by budget (replay.ReadPagesWithin;
// replay.KeptBudget is a run's), the rest read again from the trace as the calls are given to
// the script. traceErr is the trace's own error (a line that does not read, with Import's
// words), err the History's (rows that make no run).
func ReadTrace(t *journal.TraceFile, budget int) (h *replay.History, traceErr, err error) {
	h, traceErr, err = replay.ReadPagesFrom(t.Each, budget)
	switch {
	case err != nil:
		// What is wrong with the trace's lines is said first, as when a trace was read whole
		// before its History: the History stopped at its own error, the lines after it unread.
		if lineErr := t.Each(1, 0, func(*journal.Row) error { return nil }); lineErr != nil {
			return nil, lineErr, nil
		}
	case traceErr == nil && h == nil:
		_, err = replay.Read(nil) // a trace of no rows: the History of none says what is wrong
	}
	return h, traceErr, err
}

// Run runs a script against a recorded run. Every call resolves from the recorded call it is
// aligned with, whatever it asked (so the script goes on and every divergence is found); a
// call the record does not have resolves held. Nothing is written anywhere.
func Run(ctx context.Context, opts Options) (*Report, error) {
	h := opts.History
	if h == nil {
		var err error
		if h, err = replay.Read(opts.Rows); err != nil {
			return nil, err
		}
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	ctx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	s := &host{
		h: h, log: opts.Log, clock: h.ClockStart(), tiers: map[string]int{}, limits: opts.Limits,
		rng:    rand.New(rand.NewPCG(runner.Seed(h.Run, "crw.random"), 0)),
		roles:  inputs.RoleTable(h.Started.RolePairs),
		noRepo: opts.NoRepository, trace: opts.History == nil || opts.Trace != nil,
		traceCommitted: slices.ContainsFunc(opts.Rows, func(r journal.Row) bool { return r.Type == journal.TypeCommitIntent }) ||
			(opts.Trace != nil && opts.Trace.Committed()),
		asked: map[string]bool{}, stepAsked: map[string]bool{}, open: map[string]bool{}, given: map[string]bool{},
		verdicts: map[string]json.RawMessage{}, effectWaits: map[string][]func(json.RawMessage, error){}, toldHolds: map[string][]string{},
		stopRun: stopRun,
	}
	for _, ts := range h.TierSteps {
		if ts.DecisionID != "" {
			s.stepAsked[ts.DecisionID] = true
		}
	}
	if s.roles == nil {
		s.roles = inputs.RoleTable{}
	}
	s.replay = replay.New(h, replay.Align, func() {
		if s.wake != nil {
			s.wake()
		}
	})
	defer s.replay.Stop()
	report := &Report{Run: h.Run, Backend: h.Backend, Script: opts.Script, Recorded: h.Indexed(),
		Divergences: []Divergence{}, Unmade: []Call{}, New: []Call{}}
	s.report = report

	input := h.Started.Input
	if input == nil {
		input = json.RawMessage("null")
	}
	script, err := vm.New(vm.Config{
		Workflow: opts.Script, LibDirs: opts.LibDirs, Builtin: lib.FS, Input: input,
		Seed: runner.Seed(h.Run, "Math.random"), Host: s, Limits: runspec.VMLimits(opts.Limits),
	})
	if err != nil {
		return nil, ends.LoadError(err)
	}
	out, runErr := script.Run(ctx)
	var se *vm.ScriptError
	stop := s.stop()
	s.stopMu.Lock()
	report.WaitsFrom, report.StopAfterWait = s.waitsFrom, s.stopAfterWait
	s.stopMu.Unlock()
	switch {
	case stop != nil:
		report.Status, report.Error, report.Stop = store.RunFailed, journal.RunErrorOf(stop, ""), stop
	case runErr == nil:
		report.Status, report.Result = store.RunCompleted, out
	case errors.As(runErr, &se):
		report.Status, report.Error = store.RunFailed, ends.ThrownError(se)
	default:
		return nil, errs.New(errs.CapabilityUnavailable, "the shadow replay could not run the script").Wrap(runErr)
	}
	s.errMu.Lock()
	loadErr := s.loadErr
	s.errMu.Unlock()
	if loadErr != nil {
		return nil, loadErr
	}
	for i := 1; stop == nil && i <= h.MaxIndex; i++ { // a stopped run makes none of the rest
		rec := h.AtIndex(i)
		if rec == nil || s.replay.Made(rec) {
			continue
		}
		p, err := h.PreparedRow(rec)
		if err != nil {
			return nil, err
		}
		report.Unmade = append(report.Unmade, Call{Position: i, Call: p.Call, Role: p.Role, Node: p.Node, Prompt: short(p.Prompt), Site: p.Site})
	}
	return report, nil
}

// host is the host of a shadow replay.
type host struct {
	h       *replay.History
	replay  *replay.Replayer
	log     io.Writer
	clock   time.Time // touched on the loop goroutine only
	rng     *rand.Rand
	roles   inputs.RoleTable
	schemas inputs.Schemas
	wake    func()

	mu     sync.Mutex
	report *Report
	made   int // the highest position of a call the script made (under mu)

	errMu   sync.Mutex // deliveries run under the replay's lock, and may under mu
	loadErr error      // the first recorded call whose rows could not be read again

	// crw.commit and crw.tierStep calls so far, and each node's tier (loop goroutine only).
	commits, tierSteps int
	tiers              map[string]int
	limits             *store.Limits
	noRepo             bool // the recorded run has no repository
	trace              bool // the record is a trace's rows
	traceCommitted     bool // and they hold a commit (one a resume made again, it may be)
	// leftAt is where a resume leaves the record: once the script is given a call a pause held,
	// the first row at which the process that held it had a held result (replay.Replayer.LeftAt);
	// remade, whether the commits from there are ones a resume makes again (loop goroutine only).
	leftAt uint64
	remade bool

	// The decisions the script asked, and those of the record's tier steps (loop goroutine
	// only): crw.decide refuses as the run's book does (decisions.CheckAsk).
	asked, stepAsked map[string]bool

	// The calls issued and not yet given to the script, and those given (by id): a resume:
	// handle may name only a call given (callsMu, not mu: deliveries run under mu).
	callsMu     sync.Mutex
	open, given map[string]bool

	// The operators' verdicts that reached the script at their places among the deliveries,
	// and the crw.effect promises waiting for one.
	verdictMu   sync.Mutex
	verdicts    map[string]json.RawMessage
	effectWaits map[string][]func(json.RawMessage, error)
	// stopRun interrupts the script; stopped is why, the first divergence at an effect (a commit,
	// a tier step or a decision asked otherwise than the record's), where the run stops.
	stopRun func(error)
	stopMu  sync.Mutex
	stopped *errs.Error
	// unanswered are the decisions the script waits for that the record has no answer to
	// (loop goroutine only): Idle rejects them once nothing else can come.
	unanswered []unanswered
	// waitsFrom is Report.WaitsFrom, stopAfterWait Report.StopAfterWait (under stopMu).
	waitsFrom     int
	stopAfterWait bool

	// toldHolds are, by node, the calls whose unknown outcome the script was given and whose
	// verdict has not reached it: crw.commit and crw.tierStep refuse the node meanwhile, as
	// the runner's book does (decisions.Book.Told).
	toldHolds map[string][]string
}

// failLoad keeps err, the first error of a recorded row that could not be read again, which
// the shadow fails with.
func (s *host) failLoad(err error) {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if s.loadErr == nil {
		s.loadErr = err
	}
}

var (
	_ vm.Host   = (*host)(nil)
	_ vm.Idler  = (*host)(nil)
	_ vm.Waker  = (*host)(nil)
	_ vm.Poster = (*host)(nil)
)

func (s *host) Now() time.Time                        { return s.clock }
func (s *host) Random() float64                       { return s.rng.Float64() }
func (s *host) CheckSchema(b []byte) []loader.Problem { return inputs.CheckSchema(b) }
func (s *host) SetWake(wake func())                   { s.wake = wake }

// Idle implements vm.Idler. A script that waits for nothing but decisions nobody answers a
// shadow is where a resume lets its process go: it is told so then (waiting_decision), and what
// it has made so far is what a resume makes before it waits (Report.WaitsFrom).
func (s *host) Idle() {
	if gave := s.replay.Idle(); gave || len(s.unanswered) == 0 || s.replay.Due() {
		return // a result given goes to the script, which may make calls before it waits
	}
	s.waits()
	for _, u := range s.unanswered {
		go u.settle(nil, errs.Throw(errs.RunUnavailable, "waiting_decision", "%s", u.why))
	}
	s.unanswered = nil
}

// unanswered is a decision the script waits for that nobody answers a shadow: why says so.
type unanswered struct {
	settle func(json.RawMessage, error)
	why    string
}

func (s *host) Log(level, message string) { scriptlog.WriteConsole(s.log, level, message) }

// Commit implements crw.Host: the recorded run's commit at the same place, or an error: a
// shadow commits nothing.
func (s *host) Commit(node, message string) (json.RawMessage, error) {
	if s.noRepo && !plant.On(plant.ShadowCommitsWithoutRepo) {
		return nil, effects.NoRepository()
	}
	if call, held := s.heldBy(node); held {
		return nil, effects.RecoveryHold("crw.commit", node, call, s.h.Run)
	}
	k := s.commits
	s.commits++
	if k >= len(s.h.Commits) {
		if c := s.owedWriter(node); c != nil {
			// The node's worktree holds what the record's later calls of it wrote: a commit
			// the record has none of here would hold it. The script took another path.
			return nil, s.diverged(effects.OwedCommitDivergence(k, node, c.ID))
		}
		// Past the record's commits, which a resume would make: a shadow commits nothing.
		hint := ""
		if s.trace && len(s.h.Commits) == 0 && !s.traceCommitted {
			hint = " (the shadow of a trace of a run without a repository is given --no-repo)"
		}
		return nil, errs.Throw(errs.RevisionConflict, reasonUnrecorded, "crw.commit #%d of node %q: the recorded run has no such commit, and a shadow commits nothing%s", k+1, node, hint)
	}
	rec := s.h.Commits[k]
	if !s.remade && s.leftAt != 0 && s.h.SupersededBy(rec.Intent.Seq, s.leftAt) {
		// The process that recorded this commit and every later one had the result of a call
		// a pause held, which a resume runs again: it makes them again (effects.Commit).
		s.remade = true
	}
	if d := effects.CommitDivergence(k, rec, node, message); d != nil {
		if s.remade {
			return nil, errs.Throw(errs.RevisionConflict, reasonUnrecorded, "crw.commit #%d of node %q: the recorded run made its commit here with a result a pause held, and a resume makes it again; a shadow commits nothing", k+1, node)
		}
		return nil, s.diverged(d)
	}
	if rec.Result == nil && rec.Intent.Status == "" {
		// Its process died, or goes on, between the intent and the result: a resume would
		// finish the commit from the intent, which a shadow does not.
		return nil, errs.Throw(errs.RevisionConflict, reasonUnrecorded, "crw.commit #%d of node %q: the recorded run did not record its result", k+1, node)
	}
	return effects.CommitOutcome(rec.Intent, rec.Result)
}

// TierStep implements crw.Host: the recorded run's tier step at the same place.
func (s *host) TierStep(node, evidence string) (json.RawMessage, error) {
	if call, held := s.heldBy(node); held {
		return nil, effects.RecoveryHold("crw.tierStep", node, call, s.h.Run)
	}
	// The runner's checks, against the record.
	var ended effects.Ended
	e := s.h.Call(evidence)
	if e != nil {
		ended = effects.Ended{Node: e.Node, Role: e.Role, Status: journal.StatusOf(e.EndType)}
	}
	if err := effects.CheckTierStep(node, evidence, ended, e != nil && e.EndType != "", s.tiers[node], "the recorded run"); err != nil {
		return nil, err
	}
	k := s.tierSteps
	if k >= len(s.h.TierSteps) {
		// A resume makes it: the node's next executor calls run a tier up, as here, and one
		// the record has of the node then diverges (its role), as in the resume.
		s.tierSteps++
		s.tiers[node]++
		return nil, errs.Throw(errs.RevisionConflict, reasonUnrecorded, "crw.tierStep #%d of node %q: the recorded run has no such tier step, and a shadow steps nothing", k+1, node)
	}
	if d := effects.TierStepDivergence(k, s.h.TierSteps[k], node, evidence); d != nil {
		return nil, s.diverged(d)
	}
	s.tierSteps++
	s.tiers[node]++
	return effects.TierOutcome(s.h.TierSteps[k])
}

// Decide implements crw.Host: what the run's book refuses is refused (decisions.CheckAsk), a
// schema other than the recorded one is a divergence (unless the record asked it where a resume
// leaves the record, which asks it anew), and the recorded answer reaches the script at its
// place among the deliveries, as in a resume; a decision the record has no answer to is
// rejected once the script waits for nothing else (Idle): nobody answers a shadow.
func (s *host) Decide(d crw.Decision, settle func(json.RawMessage, error)) error {
	if _, err := decisions.CheckAsk(d, s.asked, s.stepAsked[d.ID]); err != nil {
		return err
	}
	s.asked[d.ID] = true
	if rec := s.h.Decisions[d.ID]; rec != nil {
		div := decisions.SchemaChanged(rec.Request, d)
		switch {
		case div != nil && !decisions.AskedPastTheRecord(s.h, rec, s.leftAt, s.leftAt != 0):
			return s.diverged(div)
		case div == nil && rec.Answer != nil:
			answer := rec.Answer.Output
			s.replay.Recorded(rec.Call, func() { settle(answer, nil) })
			return nil
		case div != nil:
			// Asked by the process a pause held calls in, once it had a held result: a resume,
			// which runs the call again, asks it anew and waits for its answer.
			s.unanswered = append(s.unanswered, unanswered{settle, fmt.Sprintf("crw.decide %q: a resume asks it anew, with the schema the script builds now, and waits for its answer: nobody answers a shadow", d.ID)})
			return nil
		}
	}
	s.unanswered = append(s.unanswered, unanswered{settle, fmt.Sprintf("crw.decide %q: the recorded run has no answer to it, and nobody answers a shadow", d.ID)})
	return nil
}

// waits notes that the script waits for nothing but decisions a resume would wait for the
// answers to, before the calls it has not made yet (Report.WaitsFrom).
func (s *host) waits() {
	s.mu.Lock()
	next := s.made + 1
	s.mu.Unlock()
	s.stopMu.Lock()
	defer s.stopMu.Unlock()
	if s.waitsFrom == 0 {
		s.waitsFrom = next
	}
}

// Effect implements crw.Host: the recorded run's verdict on the call once it has reached the
// script at its place among the deliveries (until then the promise waits, as in a resume), or
// a rejection: nobody gives a shadow one.
func (s *host) Effect(call string, settle func(json.RawMessage, error)) error {
	c := s.h.Call(call)
	if c == nil || c.EndType != journal.TypeOutcomeUnknown {
		return errs.Throw(errs.InvalidRequest, "", "crw.effect: %q names no call of the recorded run that ended unknown", call)
	}
	s.verdictMu.Lock()
	if v, ok := s.verdicts[call]; ok {
		s.verdictMu.Unlock()
		settle(v, nil)
		return nil
	}
	if _, coming := s.h.Reconciled[call]; coming {
		s.effectWaits[call] = append(s.effectWaits[call], settle)
		s.verdictMu.Unlock()
		return nil
	}
	s.verdictMu.Unlock()
	go settle(nil, errs.Throw(errs.RunUnavailable, "waiting_decision", "crw.effect %s: the recorded run has no verdict on it, and nobody gives a shadow one", call))
	return nil
}

// SetPost implements vm.Poster: the recorded verdicts reach the script's loop through it, each
// in a turn of its own at its place among the deliveries, as in a resume (the run's book of
// decisions: RecordedInTurn).
func (s *host) SetPost(post func(func() error)) {
	for call, c := range s.h.VerdictCalls {
		value := decisions.VerdictValue(call, s.h.Reconciled[call])
		s.replay.RecordedInTurn(c, func(done func()) {
			post(func() error {
				s.verdictArrived(call, value)
				done()
				return nil
			})
		})
	}
}

// verdictArrived is a recorded verdict's arrival at the script: from then on crw.effect
// answers with it, and the promises waiting for it settle.
func (s *host) verdictArrived(call string, value json.RawMessage) {
	s.verdictMu.Lock()
	s.verdicts[call] = value
	waits := s.effectWaits[call]
	delete(s.effectWaits, call)
	decisions.ReleaseTold(s.toldHolds, call)
	s.verdictMu.Unlock()
	for _, settle := range waits {
		settle(value, nil)
	}
}

// reasonUnrecorded is the reason of what an effect past the record throws in a shadow: a resume
// would make it, a shadow makes nothing.
const reasonUnrecorded = "unrecorded"

// diverged stops the script at d, an effect it asks otherwise than the record has at its place:
// the run stops there whatever its script does with what it is thrown (effects.DivergenceStop),
// and so does its shadow. It returns what the script is thrown meanwhile.
func (s *host) diverged(d error) error {
	s.stopMu.Lock()
	if s.stopped == nil {
		s.stopped = effects.DivergenceStop(s.h.Run, d)
		s.stopAfterWait = s.waitsFrom != 0
	}
	s.stopMu.Unlock()
	s.stopRun(d)
	return effects.DivergenceThrown(d)
}

// owedWriter is a call of node that writes the record has and the script has not made yet,
// while the script is on the record (no call a pause held given it yet): Replayer.OwedWriter.
func (s *host) owedWriter(node string) *replay.Call {
	if s.leftAt != 0 {
		return nil
	}
	return s.replay.OwedWriter(node)
}

// stop is the divergence that stopped the script, if one did.
func (s *host) stop() *errs.Error {
	s.stopMu.Lock()
	defer s.stopMu.Unlock()
	return s.stopped
}

// told notes that the script was given call's unknown outcome: node is held until the verdict
// reaches the script, unless it came first.
func (s *host) told(node, call string) {
	s.verdictMu.Lock()
	defer s.verdictMu.Unlock()
	if _, decided := s.verdicts[call]; !decided {
		s.toldHolds[node] = append(s.toldHolds[node], call)
	}
}

// heldBy is the first call whose unknown outcome holds node for the script, if one does.
func (s *host) heldBy(node string) (call string, held bool) {
	s.verdictMu.Lock()
	defer s.verdictMu.Unlock()
	if told := s.toldHolds[node]; len(told) > 0 {
		return told[0], true
	}
	return "", false
}

// Call implements agent.Caller for the shadow: align with the record, resolve from it.
func (s *host) Call(req agent.Request, settle agent.Settle) error {
	if err := s.resumes(req.Resume); err != nil {
		return err
	}
	if max := s.limits.Prompt(); int64(len(req.Prompt)) > max {
		return errs.Throw(errs.InvalidRequest, "prompt_too_large", "prompt is %d bytes; the run's limit is %d (--max-prompt %d KiB)", len(req.Prompt), max, max>>10)
	}
	if req.Role == "executor" && s.tiers[req.Node] > 0 {
		req.Role = "executor-t1"
	}
	p := inputs.Prepare(req, s.roles, &s.schemas)
	m := s.replay.Next(&p.Inputs)
	offRecord := m.Rec != nil && m.Rec.Reopened() && s.leftAt == 0 && m.Rec.EndType != ""
	if offRecord {
		s.leftAt = s.h.PauseHeldFrom(m.Rec.EndSeq)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if offRecord {
		s.report.OffRecord = m.Index
	}
	s.made = max(s.made, m.Index)
	switch m.Kind {
	case replay.Fresh:
		s.report.New = append(s.report.New, Call{Position: m.Index, Role: req.Role, Node: req.Node, Prompt: short(req.Prompt), Site: req.Site})
		s.replay.Live(s.held(indexed(&p, m.Index), settle, "the recorded run has no such call: it cannot run in a shadow", len(s.report.New)))
		return nil
	}
	if m.Same {
		s.report.Matched++
	} else {
		want, err := s.h.PreparedRow(m.Rec)
		if err != nil {
			s.failLoad(err) // the report would name a stand-in's inputs
		}
		s.report.Divergences = append(s.report.Divergences, divergence(m.Index, want, replay.WithDigests(indexed(&p, m.Index))))
	}
	if m.Kind == replay.Continue {
		s.replay.Live(s.held(m.Rec.Prepared, settle, "the recorded call has no outcome to replay", 0))
		return nil
	}
	rec := m.Rec
	s.issued(rec.ID)
	s.replay.Recorded(rec, func() {
		// A paged History reads the call's rows again now, as a resume delivers it.
		res, at, err := s.h.LoadResult(rec, s.h.OmitCallSeqs())
		if err != nil {
			s.failLoad(err)
			s.held(indexed(&p, m.Index), settle, "the recorded call's rows cannot be read again", 0)()
			return
		}
		settle(runner.ScriptResult(res), func() func() {
			s.clock = at
			s.delivered(rec.ID)
			if rec.EndType == journal.TypeOutcomeUnknown {
				s.told(req.Node, rec.ID)
			}
			return nil
		})
	})
	return nil
}

// indexed is p's prepared row at issue index i.
func indexed(p *inputs.Prepared, i int) *journal.Row {
	row := p.Row()
	row.Index = i
	return row
}

// held resolves a call the shadow cannot answer: held, with nothing sent. A call the record
// does not have gets the nth id past the record's.
func (s *host) held(p *journal.Row, settle agent.Settle, why string, nth int) func() {
	row := journal.Held("engine_paused", why)
	prepared := *p
	if prepared.Call == "" {
		prepared.Call = fmt.Sprintf("c%d", s.h.MaxCall+nth)
	}
	cr := result.Build(s.h.Run, &prepared, nil, row)
	if s.h.OmitCallSeqs() {
		cr = cr.WithoutSeqs()
	}
	res := runner.ScriptResult(cr)
	s.issued(prepared.Call)
	return func() {
		settle(res, func() func() {
			s.delivered(prepared.Call)
			return nil
		})
	}
}

// resumes refuses a resume: handle the run would have refused: one that is no handle, and one
// of this run naming a call whose result the script has not been given (runner.resumes).
func (s *host) resumes(handle string) error {
	if handle == "" {
		return nil
	}
	runID, callID, ok := result.ParseHandle(handle)
	if !ok {
		return errs.Throw(errs.InvalidRequest, "", "resume: %q is not a handle (crwh1:<run>:<call>)", handle)
	}
	if runID != s.h.Run {
		return nil
	}
	s.callsMu.Lock()
	open, given := s.open[callID], s.given[callID]
	s.callsMu.Unlock()
	switch {
	case open:
		return errs.Throw(errs.InvalidRequest, "", "resume: handle %s names call %s, which has not ended: await its result first", handle, callID)
	case !given:
		return errs.Throw(errs.InvalidRequest, "", "resume: handle %s names no call of this run", handle)
	}
	return nil
}

// issued notes a call the script made, its result not given yet; delivered, its result given
// (on the loop goroutine, as the script is given it: as in the run, the answer is the same on
// every replay of the script).
func (s *host) issued(id string) {
	s.callsMu.Lock()
	s.open[id] = true
	s.callsMu.Unlock()
}

func (s *host) delivered(id string) {
	s.callsMu.Lock()
	delete(s.open, id)
	s.given[id] = true
	s.callsMu.Unlock()
}

func divergence(pos int, want, got *journal.Row) Divergence {
	d := Divergence{Position: pos, Call: want.Call, Node: want.Node}
	for _, f := range replay.FieldDiffs(want, got) {
		if f.Field == "prompt" {
			d.Diff = lineDiff(f.Expected, f.Actual)
		}
		f.Expected, f.Actual = short(f.Expected), short(f.Actual)
		d.Fields = append(d.Fields, f)
	}
	return d
}

// short cuts a text for a report line.
func short(s string) string {
	const max = 120
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}

// lineDiff is a short diff of two texts: the lines that differ between their common start and
// end, "-" for the recorded text and "+" for the script's.
func lineDiff(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	out := []string{fmt.Sprintf("@@ line %d @@", pre+1)}
	const maxLines = 12
	for i, l := range a[pre : len(a)-suf] {
		if i == maxLines {
			out = append(out, "- …")
			break
		}
		out = append(out, "- "+short(l))
	}
	for i, l := range b[pre : len(b)-suf] {
		if i == maxLines {
			out = append(out, "+ …")
			break
		}
		out = append(out, "+ "+short(l))
	}
	return strings.Join(out, "\n")
}
