package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/lib"
	"github.com/crw-dev/crw/runtime/loader"
	"github.com/crw-dev/crw/runtime/modules/agent"
	"github.com/crw-dev/crw/runtime/vm"
)

// ShadowOptions is a shadow replay: a script, maybe changed, run against a recorded run with no
// backend at all.
type ShadowOptions struct {
	Script  string
	Rows    []journal.Row // the recorded run (a journal or a trace)
	LibDirs []string
	Log     io.Writer
}

// ShadowReport is what a shadow replay found.
type ShadowReport struct {
	Run         string             `json:"run"`
	Backend     string             `json:"backend"`
	Script      string             `json:"script"`
	Recorded    int                `json:"recorded"` // calls in the recorded run
	Matched     int                `json:"matched"`
	Divergences []ShadowDivergence `json:"divergences"`
	Unmade      []ShadowCall       `json:"unmade"` // recorded calls the script never made
	New         []ShadowCall       `json:"new"`    // calls the recorded run does not have
	Status      string             `json:"status"` // the script's end: completed or failed
	Result      json.RawMessage    `json:"result"`
	Error       *journal.RunError  `json:"error"`
}

// ShadowDivergence is a call whose inputs differ from the recorded call at its position.
type ShadowDivergence struct {
	Position int         `json:"position"` // 1-based issue order
	Call     string      `json:"call"`     // the recorded call's id
	Node     string      `json:"node"`
	Fields   []FieldDiff `json:"fields"`
	Diff     string      `json:"diff,omitempty"` // a short diff of the prompts
}

// FieldDiff is one input that differs.
type FieldDiff struct {
	Field    string `json:"field"`
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
}

// ShadowCall names a call in a shadow report.
type ShadowCall struct {
	Position int    `json:"position"`
	Call     string `json:"call,omitempty"`
	Role     string `json:"role"`
	Node     string `json:"node"`
	Prompt   string `json:"prompt"`
	Site     string `json:"site,omitempty"`
}

// Shadow runs a script against a recorded run. Every call resolves from the recorded call at
// its position, whatever it asked (so the script can go on and every divergence is found); a
// call past the record resolves held. Nothing is written anywhere.
func Shadow(ctx context.Context, opts ShadowOptions) (*ShadowReport, error) {
	h, err := readHistory(opts.Rows)
	if err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	s := &shadowHost{
		h: h, order: h.outcomes(), log: opts.Log, clock: h.clockStart(), matched: map[*recorded]bool{},
		cursor: 1, last: maxIndex(h.byIndex), ready: map[*recorded]func(){}, passed: map[*recorded]bool{},
		rng:   rand.New(rand.NewPCG(seed(h.run, "crw.random"), 0)),
		roles: RoleTable(h.started.RolePairs),
	}
	if s.roles == nil {
		s.roles = RoleTable{}
	}
	h.buildResults(s.order)
	for node, call := range h.holds {
		_ = call
		s.holds = append(s.holds, node)
	}
	report := &ShadowReport{Run: h.run, Backend: h.backend, Script: opts.Script, Recorded: len(h.byIndex),
		Divergences: []ShadowDivergence{}, Unmade: []ShadowCall{}, New: []ShadowCall{}}
	s.report = report

	input := h.started.Input
	if input == nil {
		input = json.RawMessage("null")
	}
	script, err := vm.New(vm.Config{
		Workflow: opts.Script, LibDirs: opts.LibDirs, Builtin: lib.FS, Input: input,
		Seed: seed(h.run, "Math.random"), Host: s,
	})
	if err != nil {
		return nil, loadError(err)
	}
	out, runErr := script.Run(ctx)
	var se *vm.ScriptError
	switch {
	case runErr == nil:
		report.Status, report.Result = RunCompleted, out
	case errors.As(runErr, &se):
		report.Status = RunFailed
		report.Error = &journal.RunError{Message: se.Message, Stack: se.Stack, Code: se.Code, Reason: se.Reason}
	default:
		return nil, errs.New(errs.CapabilityUnavailable, "shadow: %v", runErr)
	}
	for i, last := 1, maxIndex(h.byIndex); i <= last; i++ {
		rec := h.byIndex[i]
		if rec == nil || s.matched[rec] {
			continue
		}
		p := rec.prepared
		report.Unmade = append(report.Unmade, ShadowCall{Position: i, Call: p.Call, Role: p.Role, Node: p.Node, Prompt: short(p.Prompt), Site: p.Site})
	}
	return report, nil
}

func maxIndex(m map[int]*recorded) int {
	n := 0
	for i := range m {
		if i > n {
			n = i
		}
	}
	return n
}

// shadowHost is the host of a shadow replay.
type shadowHost struct {
	h       *history
	order   []*recorded // the recorded outcomes, in the order the script received them
	log     io.Writer
	clock   time.Time
	rng     *rand.Rand
	roles   RoleTable
	holds   []string
	schemas schemaCache
	report  *ShadowReport

	mu       sync.Mutex
	issued   int
	cursor   int // the next recorded position a call may stand for
	last     int // the last recorded position
	matched  map[*recorded]bool
	ready    map[*recorded]func() // recorded results waiting for their turn in the recorded order
	passed   map[*recorded]bool   // recorded completions passed over while their calls were not made
	next     int                  // position in order
	heldBack []func()
}

var _ vm.Host = (*shadowHost)(nil)

func (s *shadowHost) Now() time.Time                    { return s.clock }
func (s *shadowHost) Random() float64                   { return s.rng.Float64() }
func (s *shadowHost) Commit(node, message string) error { return errCommitNotSupported }
func (s *shadowHost) CheckSchema(b []byte) []loader.Problem {
	return checkSchema(b)
}

func (s *shadowHost) Log(level, message string) {
	if level == "log" || level == "info" {
		fmt.Fprintln(s.log, message)
		return
	}
	fmt.Fprintf(s.log, "%s: %s\n", level, message)
}

func (s *shadowHost) TierStep(node string) error {
	for _, n := range s.holds {
		if n == node {
			return errs.Throw(errs.UnreconciledEffect, "recovery_hold", "crw.tierStep: node %q is in recovery_hold", node)
		}
	}
	return errTierStepNotSupported
}

// Call implements agent.Caller for the shadow: compare with the record, resolve from it.
func (s *shadowHost) Call(req agent.Request, settle agent.Settle) error {
	if req.Resume != "" {
		if _, _, ok := ParseHandle(req.Resume); !ok {
			return errs.Throw(errs.InvalidRequest, "", "resume: %q is not a handle (crwh1:<run>:<call>)", req.Resume)
		}
	}
	p := prepare(req, s.roles, &s.schemas)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.issued++
	p.row.Index = s.issued
	rec, same := s.align(p.row)
	if rec == nil {
		s.report.New = append(s.report.New, ShadowCall{Position: s.issued, Role: req.Role, Node: req.Node, Prompt: short(req.Prompt), Site: req.Site})
		s.heldBack = append(s.heldBack, s.held(p.row, settle, "the recorded run has no such call: it cannot run in a shadow"))
		s.drainLocked()
		return nil
	}
	s.matched[rec] = true
	if same {
		s.report.Matched++
	} else {
		s.report.Divergences = append(s.report.Divergences, shadowDivergence(s.issued, rec.prepared, withDigests(p.row)))
	}
	if rec.terminal == nil {
		s.heldBack = append(s.heldBack, s.held(rec.prepared, settle, "the recorded call has no outcome to replay"))
		s.drainLocked()
		return nil
	}
	res := rec.replayResult(s.h.run)
	at := rec.terminal.At
	deliver := func() { settle(res, func() { s.clock = at }) }
	if s.passed[rec] {
		// Its turn in the recorded order went by while the script waited on something else.
		s.heldBack = append(s.heldBack, deliver)
	} else {
		s.ready[rec] = deliver
	}
	s.drainLocked()
	return nil
}

// shadowLookahead is how far past the next recorded call a shadow looks for the one a call
// matches: an edit that drops a few calls is reported as those calls never made, not as a
// divergence at every position after them.
const shadowLookahead = 16

// align finds the recorded call a script's call stands for: the next one when it asks the same,
// else one a little further on that does (those skipped were never made), else the next one
// when it is of the same role and node (a divergence), else none (a new call).
func (s *shadowHost) align(p *journal.Row) (rec *recorded, same bool) {
	for s.cursor <= s.last && (s.h.byIndex[s.cursor] == nil || s.matched[s.h.byIndex[s.cursor]]) {
		s.cursor++
	}
	for i := s.cursor; i <= s.last && i <= s.cursor+shadowLookahead; i++ {
		if r := s.h.byIndex[i]; r != nil && !s.matched[r] && sameInputs(r.prepared, p) {
			s.cursor = i + 1
			return r, true
		}
	}
	if r := s.h.byIndex[s.cursor]; r != nil && r.prepared.Role == p.Role && r.prepared.Node == p.Node {
		s.cursor++
		return r, false
	}
	return nil, false
}

// held resolves a call the shadow cannot answer: held, with nothing sent.
func (s *shadowHost) held(p *journal.Row, settle agent.Settle, why string) func() {
	row := &journal.Row{Type: journal.TypeHeld, Reason: "engine_paused", Detail: why}
	prepared := *p
	if prepared.Call == "" {
		prepared.Call = fmt.Sprintf("c%d", s.h.maxCall+len(s.report.New))
	}
	res, _ := json.Marshal(BuildResult(s.h.run, &prepared, nil, row))
	return func() { settle(res, nil) }
}

// drainLocked delivers recorded results in the recorded order as far as their calls were made,
// then whatever waited behind them.
func (s *shadowHost) drainLocked() {
	for s.next < len(s.order) {
		fn, ok := s.ready[s.order[s.next]]
		if !ok {
			break
		}
		s.next++
		fn()
	}
	if s.next == len(s.order) {
		for _, fn := range s.heldBack {
			fn()
		}
		s.heldBack = nil
	}
}

// Idle implements vm.Idler: the script waits, and what it waits for is held back. Release the
// results of calls the record does not have first; failing that, pass over the recorded
// completions whose calls the script never made, so the next made one can come.
func (s *shadowHost) Idle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.heldBack) > 0 {
		held := s.heldBack
		s.heldBack = nil
		for _, fn := range held {
			fn()
		}
		return
	}
	for s.next < len(s.order) {
		rec := s.order[s.next]
		if _, ok := s.ready[rec]; ok {
			break
		}
		s.passed[rec] = true
		s.next++
	}
	s.drainLocked()
}

func shadowDivergence(pos int, want, got *journal.Row) ShadowDivergence {
	d := ShadowDivergence{Position: pos, Call: want.Call, Node: want.Node}
	wf, gf := inputFields(want), inputFields(got)
	for i := range wf {
		if wf[i][1] == gf[i][1] {
			continue
		}
		d.Fields = append(d.Fields, FieldDiff{Field: wf[i][0], Expected: short(wf[i][1]), Actual: short(gf[i][1])})
		if wf[i][0] == "prompt" {
			d.Diff = lineDiff(wf[i][1], gf[i][1])
		}
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
	var out []string
	out = append(out, fmt.Sprintf("@@ line %d @@", pre+1))
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
