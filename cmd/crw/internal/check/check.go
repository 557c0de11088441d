// Package check is crw flow check: a workflow's mistakes found before any token is spent. It
// loads the workflow with a static pass over its modules (runtime/lint), then rehearses it on
// the fake backend with synthesized answers, in memory (no journal, no run folder), and
// reports what either found with its file, line and column: agent.call options it does not
// take, schemas that are not strict, calls whose promise was never awaited, timers and the
// other things a replay could not repeat, and what the rehearsal threw.
package check

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/runtime/lint"
	"github.com/crw-dev/crw/runtime/loader"
	"github.com/crw-dev/crw/store/mem"
)

// Options are what to check and how far to rehearse it.
type Options struct {
	Workflow string
	Input    json.RawMessage
	LibDirs  []string
	Roles    inputs.RoleTable
	// MaxCalls bounds the rehearsal's calls (default 1000); Timeout its time (default 60 s).
	MaxCalls int
	Timeout  time.Duration
	Limits   engine.CreateLimits
	// Faults is how many fault schedules to rehearse the workflow under after the plain
	// rehearsal (0: none); schedule i has seed Seed+i.
	Faults int
	Seed   uint64
	// NoRepo: a run started where the check runs would have no repository (the working
	// directory is in no git checkout), which its executor calls need.
	NoRepo bool
	// NoRepoAsked: the run is meant to have none (--no-repo): its executor calls end held.
	NoRepoAsked bool
}

// Finding is one mistake, where it is, and which pass found it: static (the pass over the
// modules) or run (the rehearsal).
type Finding struct {
	lint.Finding
	Source string `json:"source"`
	// Schedule is the fault schedule a finding of the faults pass (source faults) appeared
	// under.
	Schedule *ScheduleOf `json:"schedule,omitempty"`
}

// Rules the rehearsal adds to lint's.
const (
	RuleUnawaited = "unawaited_call"
	RuleThrown    = "thrown"
	RuleRefused   = "call_refused"
	// RuleNoRepository: an executor call, and a run started here would have no repository.
	RuleNoRepository = "no_repository"
)

// Report is what Check found, and how the rehearsal went.
type Report struct {
	Workflow string    `json:"workflow"`
	Findings []Finding `json:"findings"`
	// More counts the findings past what the report lists.
	More int `json:"more"`
	// Calls are the calls the rehearsal made; Status how it ended (completed, failed, …), and
	// Stopped why it stopped short of the workflow's end ("" when it did not).
	Calls   int    `json:"calls"`
	Status  string `json:"status"`
	Stopped string `json:"stopped"`
	// Faults is how the fault schedules went (nil without --faults).
	Faults *FaultsReport `json:"faults,omitempty"`
}

// Defaults of Options.
const (
	DefaultMaxCalls = 1000
	DefaultTimeout  = time.Minute
)

// Check checks a workflow. A workflow that does not load, or input that is not JSON, is an
// error (bad input); what it finds otherwise is in the Report.
func Check(ctx context.Context, opts Options) (*Report, error) {
	if opts.MaxCalls <= 0 {
		opts.MaxCalls = DefaultMaxCalls
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	st := mem.New()
	svc := &engine.Service{Store: st, Backends: backend.NewRegistry(fake.Descriptor())}
	c := lint.New(inputs.CheckSchema)
	limits := opts.Limits
	timeout := max(opts.Timeout, time.Millisecond)
	limits.Deadline = &timeout
	if limits.LoadTime == nil {
		limits.LoadTime = &timeout // loading is bounded by it too
	}
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: opts.Workflow, Input: opts.Input, LibDirs: opts.LibDirs,
		Roles: opts.Roles, Limits: limits, OmitCallSeqs: true, Lint: c})
	var le *loader.LoadError
	if errors.As(err, &le) && le.Code == loader.CodeSchemaNotStrict {
		// A schema module's export that is not strict is a mistake of the workflow's, where
		// its module declares it: a finding, as a schema written out in an agent.call is.
		rep := &Report{Workflow: opts.Workflow, Status: "not_loaded", Stopped: "a crw:lib/schemas export is not strict, so the workflow does not load"}
		rep.addNotStrict(le)
		return rep, nil
	}
	if err != nil {
		return nil, err
	}
	rep := &Report{Workflow: opts.Workflow, Findings: []Finding{}}
	found, more := c.Findings()
	for _, f := range found {
		rep.add(Finding{Finding: f, Source: "static"})
	}
	if ex := c.Executors(); opts.NoRepo && len(ex) > 0 {
		f := ex[0]
		f.Rule = RuleNoRepository
		f.Message = "agent.call: the " + ex[0].Message + " role works in the run's repository, and the working directory is in no git checkout: " +
			"crw flow run and start refuse the workflow here (give them --repo DIR, or --no-repo to run without one: its executor calls then end held worktree_failed; " +
			"crw flow check --repo DIR checks it with that repository)"
		if opts.NoRepoAsked {
			f.Message = "agent.call: the " + ex[0].Message + " role works in the run's repository, and the run has none (--no-repo): its executor calls end held worktree_failed"
		}
		rep.add(Finding{Finding: f, Source: "static"})
	}
	rep.More += more

	// The schedules rehearse the run as it was created, before this rehearsal writes to it.
	faults := &faultCheck{workflow: opts.Workflow, from: st, id: id, maxCalls: int64(opts.MaxCalls)}
	var calls atomic.Int64
	capped := &cappedBackend{Backend: fake.New(nil, nil), calls: &calls, max: int64(opts.MaxCalls), stop: func() { _ = st.RequestCancel(ctx, id) }}
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: capped, DryRun: true})
	if err != nil {
		return nil, err
	}
	rep.Status = string(end.Status)
	rows, err := svc.Rows(ctx, id)
	if err != nil {
		return nil, err
	}
	rep.Calls = rep.fromRows(rows)
	switch {
	case calls.Load() > int64(opts.MaxCalls):
		rep.Calls = min(rep.Calls, opts.MaxCalls) // those past the cap were never sent
		rep.Stopped = fmt.Sprintf("the rehearsal stopped after %d calls (--max-calls)", opts.MaxCalls)
	case end.Error != nil && end.Error.Reason == "deadline":
		rep.Stopped = fmt.Sprintf("the rehearsal stopped after %s (--timeout)", opts.Timeout)
	}
	if end.Error != nil && rep.Stopped == "" {
		rep.add(Finding{Finding: thrownAt(end.Error), Source: "run"})
	}
	switch {
	case opts.Faults > 0 && rep.Stopped != "":
		// A workflow the plain rehearsal could not finish would stop each schedule as late.
		rep.Faults = &FaultsReport{Seed: opts.Seed, Misbehaved: []uint64{}}
		rep.Stopped += "; no fault schedule was rehearsed"
	case opts.Faults > 0:
		if err := rep.faults(ctx, faults, opts.Faults, opts.Seed); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(rep.Findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	return rep, nil
}

// refusals are the reasons a call ends with that say the workflow asked for it wrongly.
var refusals = map[string]bool{"schema_not_strict": true, "pair_refused": true, "foreign_handle": true}

// fromRows adds what the rehearsal's journal shows, and counts its calls.
func (r *Report) fromRows(rows []journal.Row) int {
	sites := map[string]string{}
	for i := range rows {
		row := &rows[i]
		switch {
		case row.Type == journal.TypePrepared:
			sites[row.Call] = row.Site
		case row.Type == journal.TypeRefused && refusals[row.Reason]:
			r.at(sites[row.Call], RuleRefused, fmt.Sprintf("agent.call (call %s) was refused: %s: %s", row.Call, row.Reason, row.Detail))
		case row.Type == journal.TypeWarning && row.Reason == replay.ReasonUnawaited:
			r.at(sites[row.Call], RuleUnawaited, row.Detail)
		}
	}
	return len(sites)
}

var (
	frame  = regexp.MustCompile(`\((.+):(\d+):(\d+)\)$`)
	siteRE = regexp.MustCompile(`^(.+):(\d+):(\d+)$`)
)

// thrownAt is what a rehearsal threw, at the workflow's frame nearest the throw.
func thrownAt(e *journal.RunError) lint.Finding {
	msg := e.Text()
	if e.Code != "" && e.Code != string(errs.WorkflowFailed) {
		msg = e.Code + ": " + msg
	}
	rule := RuleThrown
	if e.Reason == "nondeterministic" {
		rule = lint.RuleNondeterminism
	}
	for _, line := range splitLines(e.Stack) {
		if m := frame.FindStringSubmatch(line); m != nil {
			ln, _ := strconv.Atoi(m[2])
			col, _ := strconv.Atoi(m[3])
			return lint.Finding{File: m[1], Line: ln, Col: col, Rule: rule, Message: msg}
		}
	}
	return lint.Finding{Rule: rule, Message: msg}
}

// at adds a finding at a call's site, file:line:col.
func (r *Report) at(site, rule, msg string) {
	f := Finding{Finding: lint.Finding{Rule: rule, Message: msg}, Source: "run"}
	if m := siteRE.FindStringSubmatch(site); m != nil {
		f.File = m[1]
		f.Line, _ = strconv.Atoi(m[2])
		f.Col, _ = strconv.Atoi(m[3])
	}
	r.add(f)
}

// add lists a finding once: the rehearsal often meets, at the same line, what the static pass
// found there, and a fault schedule what the plain rehearsal found without faults.
func (r *Report) add(f Finding) {
	if f.Source == "run" && slices.ContainsFunc(r.Findings, func(g Finding) bool { return g.File == f.File && g.Line == f.Line }) {
		return
	}
	if f.Source == "faults" && slices.ContainsFunc(r.Findings, func(g Finding) bool {
		return g.Source != "faults" && g.File == f.File && g.Line == f.Line && g.Rule == f.Rule
	}) {
		return
	}
	if len(r.Findings) >= lint.MaxFindings {
		r.More++
		return
	}
	r.Findings = append(r.Findings, f)
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

// cappedBackend is the fake backend, stopping the rehearsal once it has made max calls.
type cappedBackend struct {
	backend.Backend
	calls *atomic.Int64
	max   int64
	stop  func()
}

// Run counts the calls by their task turns; past the cap the run is cancelled (its calls end
// held cancelled).
func (b *cappedBackend) Run(ctx context.Context, t backend.Turn, rec backend.Recorder) backend.Outcome {
	if t.K == 1 && b.calls.Add(1) > b.max {
		b.stop()
		return backend.Outcome{Status: backend.Unavailable, Cause: errors.New("the rehearsal's call cap was reached")}
	}
	return b.Backend.Run(ctx, t, rec)
}

// addNotStrict adds a finding for each export of a schema module that is not strict, at its
// declaration, with its violations.
func (r *Report) addNotStrict(le *loader.LoadError) {
	if len(le.Problems) == 0 {
		r.add(Finding{Finding: lint.Finding{File: le.File, Line: le.Line, Col: le.Column, Rule: lint.RuleSchemaNotStrict, Message: le.Message}, Source: "static"})
		return
	}
	var order []string
	byExport := map[string][]loader.Problem{}
	for _, p := range le.Problems {
		if _, ok := byExport[p.Export]; !ok {
			order = append(order, p.Export)
		}
		byExport[p.Export] = append(byExport[p.Export], p)
	}
	for _, export := range order {
		ps := byExport[export]
		parts := make([]string, len(ps))
		for i, p := range ps {
			pointer := p.Pointer
			if pointer == "" {
				pointer = "(root)"
			}
			parts[i] = fmt.Sprintf("%s: %s: %s", pointer, p.Rule, p.Message)
		}
		msg := fmt.Sprintf("%s: export %q is not strict: %s", le.Module, export, strings.Join(parts, "; "))
		r.add(Finding{Finding: lint.Finding{File: le.File, Line: ps[0].Line, Col: ps[0].Column, Rule: lint.RuleSchemaNotStrict, Message: msg}, Source: "static"})
	}
}
