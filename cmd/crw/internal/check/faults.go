package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/runtime/lint"
	"github.com/crw-dev/crw/runtime/vm"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

// Rules the fault schedules add.
const (
	RuleNeverReturned  = "never_returned"
	RuleCrashDependent = "crash_dependent"
)

// ScheduleOf is the schedule a finding of the faults pass appeared under: its seed (--seed
// reproduces it), the faults it injected, and the commit after which its process crashed.
type ScheduleOf struct {
	Seed             uint64     `json:"seed"`
	Faults           []Injected `json:"faults"`
	CrashAfterCommit uint64     `json:"crash_after_commit,omitempty"`
}

// FaultsReport is how the workflow fared under its fault schedules.
type FaultsReport struct {
	Schedules int    `json:"schedules"`
	Seed      uint64 `json:"seed"` // the first schedule's; schedule i has seed Seed+i
	// Misbehaved are the seeds of the schedules under which something was found.
	Misbehaved []uint64 `json:"misbehaved"`
	// Crashed counts the schedules rehearsed with a crash and a resume too.
	Crashed int `json:"crashed"`
}

// maxProcesses bounds the processes one rehearsal runs the workflow in: its first, the
// resumes after a crash, a pause and each verdict. A workflow that has not returned by then
// never returns.
const maxProcesses = 64

// verdictBy is who the journal says gave the rehearsal's verdicts.
const verdictBy = "crw flow check"

// faultCheck rehearses a created run again and again, each time in a store of its own holding
// the run as it was created: the same run id, so crw.random() reads the same in every one.
type faultCheck struct {
	workflow string // where a finding no call locates is
	from     *mem.Store
	id       string
	maxCalls int64
}

// rehearsal is one run of the workflow under a schedule.
type rehearsal struct {
	st    *mem.Store
	svc   *engine.Service
	id    string
	seen  injections
	calls atomic.Int64
}

// outcome is how a rehearsal ended.
type outcome struct {
	end     *store.Status
	err     error  // what ended it that is no run status (a resume that diverged)
	stuck   string // why it never returned ("" when it did)
	last    string // the site of the last call that ended, and how, when it never returned
	caught  string // the site of the call a crash caught under way ("" when none)
	capped  bool   // it stopped at the call cap, which is no finding
	faults  []Injected
	commits uint64
}

// fresh is a store holding the run as it was created, and nothing of its journal.
func (c *faultCheck) fresh(ctx context.Context) (*rehearsal, error) {
	spec, err := c.from.Spec(ctx, c.id)
	if err != nil {
		return nil, err
	}
	st := mem.New()
	for _, digest := range spec.Files {
		data, err := c.from.File(ctx, digest)
		if err != nil {
			return nil, err
		}
		if _, err := st.PutFile(ctx, data); err != nil {
			return nil, err
		}
	}
	// One call at a time: the calls end in the order they were issued, in every rehearsal of a
	// schedule alike, so a result that differs after a crash differs because of the crash.
	spec.Pool = 1
	if err := st.Create(ctx, spec); err != nil {
		return nil, err
	}
	return &rehearsal{st: st, svc: &engine.Service{Store: st, Backends: backend.NewRegistry(fake.Descriptor())}, id: c.id}, nil
}

// rehearse runs the workflow under sched to its end, resuming it as an operator would: after
// a crash (after commit crashAt; 0 none), after a pause (the limit has passed), and when it
// waits for a verdict on a lost call (the schedule gives it).
func (c *faultCheck) rehearse(ctx context.Context, sched Schedule, crashAt uint64) (*outcome, error) {
	r, err := c.fresh(ctx)
	if err != nil {
		return nil, err
	}
	out := &outcome{}
	for process := 1; out.end == nil && out.err == nil && out.stuck == ""; process++ {
		if process > maxProcesses {
			out.stuck = fmt.Sprintf("it had not returned after %d resumes", maxProcesses-1)
			break
		}
		if done := r.st.Commits(r.id); crashAt > done {
			r.st.CrashAfterCommit(r.id, crashAt-done)
		}
		end, err := r.svc.Execute(ctx, r.id, engine.ExecOptions{Backend: r.backend(sched, c.maxCalls), DryRun: true})
		switch {
		case errors.Is(err, store.ErrLeaseLost):
			continue // the crash: the next process resumes it
		case err != nil:
			out.err = err
		case end.Status == store.RunPaused:
			continue // the limit has passed: the held calls run again
		case end.Status == store.RunWaitingDecision:
			out.stuck, err = r.giveVerdicts(ctx, sched, end)
			if err != nil {
				return nil, err
			}
		default:
			out.end = end
		}
	}
	out.capped = r.calls.Load() > c.maxCalls
	out.faults = r.seen.list()
	out.commits = r.st.Commits(r.id)
	if out.stuck != "" || neverSettled(out.end) || crashAt > 0 {
		rows, err := r.svc.Rows(ctx, r.id)
		if err != nil {
			return nil, err
		}
		out.last, out.caught = lastEnded(rows), caughtByCrash(rows)
	}
	return out, nil
}

// caughtByCrash is the site of the first call a crash caught under way: prepared before the
// resume's started row, ended after it ("" when the crash came between calls).
func caughtByCrash(rows []journal.Row) string {
	sites, starts := map[string]string{}, 0
	for i := range rows {
		switch row := &rows[i]; {
		case row.Type == journal.TypeStarted:
			starts++
		case row.Type == journal.TypePrepared && starts == 1:
			sites[row.Call] = row.Site
		case journal.IsTerminal(row.Type) && starts == 1:
			delete(sites, row.Call)
		case journal.IsTerminal(row.Type) && sites[row.Call] != "":
			return sites[row.Call]
		}
	}
	return ""
}

func neverSettled(end *store.Status) bool {
	return end != nil && end.Error != nil && end.Error.Text() == vm.NeverSettled
}

// lastEnded is the last call that ended in rows: its site and status ("" when none did).
func lastEnded(rows []journal.Row) string {
	sites, last := map[string]string{}, ""
	for i := range rows {
		switch row := &rows[i]; {
		case row.Type == journal.TypePrepared:
			sites[row.Call] = row.Site
		case journal.IsTerminal(row.Type):
			last = fmt.Sprintf("%s %s", sites[row.Call], journal.StatusOf(row.Type))
		}
	}
	return last
}

func (r *rehearsal) backend(sched Schedule, maxCalls int64) backend.Backend {
	faulty := &faultBackend{Backend: fake.New(nil, nil), sched: sched, seen: &r.seen}
	return &cappedBackend{Backend: faulty, calls: &r.calls, max: maxCalls, stop: func() { _ = r.st.RequestCancel(context.Background(), r.id) }}
}

// giveVerdicts answers the verdicts the run waits for, as the schedule says; what it cannot
// answer (a decision a rehearsal does not answer) is why the run never returns.
func (r *rehearsal) giveVerdicts(ctx context.Context, sched Schedule, end *store.Status) (string, error) {
	rows, err := r.svc.Rows(ctx, r.id)
	if err != nil {
		return "", err
	}
	for _, d := range end.Decisions {
		call, ok := strings.CutPrefix(d.ID, journal.VerdictPrefix)
		if !ok {
			return fmt.Sprintf("it waits for decision %q, which nobody answers", d.ID), nil
		}
		v, err := verdictOn(rows, call, sched)
		if err != nil {
			return "", err
		}
		if _, err := r.svc.Recover(ctx, r.id, call, v, verdictBy, false); err != nil {
			return "", err
		}
	}
	if len(end.Decisions) == 0 {
		return "it waits for a decision nobody can give", nil
	}
	return "", nil
}

// verdictOn is the schedule's verdict on a lost call: applied, with an output synthesized
// from its schema, or not_applied.
func verdictOn(rows []journal.Row, call string, sched Schedule) (decisions.Verdict, error) {
	index, schemaOf, seen := 0, json.RawMessage(nil), map[string]bool{}
	for i := range rows {
		row := &rows[i]
		switch {
		case row.Type == journal.TypePrepared && !seen[row.Call]:
			seen[row.Call] = true
			if row.Call == call {
				index = len(seen)
			}
		case row.Type == journal.TypeOutcomeUnknown && row.Call == call:
			schemaOf = row.Schema // the unknown outcome keeps the schema its output is checked against
		}
	}
	if !sched.Applied(index) {
		return decisions.Verdict{Verdict: decisions.VerdictNotApplied}, nil
	}
	if schemaOf == nil {
		return decisions.Verdict{Verdict: decisions.VerdictApplied, Output: json.RawMessage(`"ok"`)}, nil
	}
	doc, err := schema.Synthesize(schemaOf)
	if err != nil {
		return decisions.Verdict{Verdict: decisions.VerdictNotApplied}, nil // no output can be made: it did not happen
	}
	return decisions.Verdict{Verdict: decisions.VerdictApplied, Output: doc}, nil
}

// scheduleFindings rehearses the workflow under one schedule, then, when the schedule
// crashes, again with the crash (crashed says it did): what differs from the run without it
// depends on the crash.
func (c *faultCheck) scheduleFindings(ctx context.Context, sched Schedule) (found []Finding, crashed bool, err error) {
	base, err := c.rehearse(ctx, sched, 0)
	if err != nil {
		return nil, false, err
	}
	found = c.misbehaved(base, sched, 0)
	crashAt := sched.CrashAt(base.commits)
	if len(found) > 0 || crashAt == 0 || base.capped || stoppedShort(base) {
		return found, false, nil
	}
	found, err = c.crashFindings(ctx, sched, base, crashAt)
	return found, err == nil, err
}

// crashFindings rehearses sched with a crash after commit crashAt: what it shows, or how its
// end differs from base's.
func (c *faultCheck) crashFindings(ctx context.Context, sched Schedule, base *outcome, crashAt uint64) ([]Finding, error) {
	crashed, err := c.rehearse(ctx, sched, crashAt)
	if err != nil {
		return nil, err
	}
	if found := c.misbehaved(crashed, sched, crashAt); len(found) > 0 {
		return found, nil
	}
	if crashed.capped || stoppedShort(crashed) || sameEnd(base.end, crashed.end) {
		return nil, nil
	}
	// A result that differs between two runs of the same kind too (one that reads the clock
	// on a busy machine) depends on time, not on the crash: each is run again.
	if same, err := c.endsAlike(ctx, sched, 0, base.end); err != nil || !same {
		return nil, err
	}
	if same, err := c.endsAlike(ctx, sched, crashAt, crashed.end); err != nil || !same {
		return nil, err
	}
	msg := fmt.Sprintf("the workflow ended %s after a crash and a resume, %s without the crash", endOf(crashed.end), endOf(base.end))
	if at, after, without, ok := resultDifference(crashed.end, base.end); ok {
		msg = fmt.Sprintf("the workflow's result differs at %s: %s after a crash and a resume, %s without the crash", at, after, without)
	}
	f := lint.Finding{Rule: RuleCrashDependent, Message: msg}
	f.File = c.workflow
	if file, line, col, ok := siteOf(crashed.caught); ok {
		f.File, f.Line, f.Col = file, line, col
		f.Message += "; the crash came while this call was under way"
	}
	return []Finding{c.finding(f, sched, crashed, crashAt)}, nil
}

// endsAlike rehearses sched again and says whether it ends as end did.
func (c *faultCheck) endsAlike(ctx context.Context, sched Schedule, crashAt uint64, end *store.Status) (bool, error) {
	again, err := c.rehearse(ctx, sched, crashAt)
	if err != nil {
		return false, err
	}
	return again.end != nil && sameEnd(end, again.end), nil
}

// misbehaved is what a rehearsal's end shows: a throw, a resume that diverged, a run that
// never returned.
func (c *faultCheck) misbehaved(o *outcome, sched Schedule, crashAt uint64) []Finding {
	switch {
	case o.capped:
		return nil
	case o.err != nil:
		rule := RuleThrown
		if errs.CodeOf(o.err) == errs.RevisionConflict {
			rule = lint.RuleNondeterminism
		}
		return []Finding{c.finding(lint.Finding{File: c.workflow, Rule: rule, Message: o.err.Error()}, sched, o, crashAt)}
	case o.stuck != "" || neverSettled(o.end):
		return []Finding{c.finding(neverReturned(o, c.workflow), sched, o, crashAt)}
	case o.end.Error != nil && !stoppedShort(o):
		return []Finding{c.finding(thrownAt(o.end.Error), sched, o, crashAt)}
	}
	return nil
}

// neverReturned is a run that did not return, at the last call that ended before it stopped:
// what the workflow waits for comes after that call.
func neverReturned(o *outcome, workflow string) lint.Finding {
	why := o.stuck
	if why == "" {
		why = "its promise never settled: it awaits something no call, decision or verdict settles"
	}
	f := lint.Finding{File: workflow, Rule: RuleNeverReturned, Message: "the workflow never returned: " + why}
	site, status, _ := strings.Cut(o.last, " ")
	if file, line, col, ok := siteOf(site); ok {
		f.File, f.Line, f.Col = file, line, col
		f.Message += fmt.Sprintf(" (after this call ended %s)", status)
	}
	return f
}

// siteOf reads a call's site, file:line:col.
func siteOf(site string) (file string, line, col int, ok bool) {
	m := siteRE.FindStringSubmatch(site)
	if m == nil {
		return "", 0, 0, false
	}
	line, _ = strconv.Atoi(m[2])
	col, _ = strconv.Atoi(m[3])
	return m[1], line, col, true
}

func (c *faultCheck) finding(f lint.Finding, sched Schedule, o *outcome, crashAt uint64) Finding {
	return Finding{Finding: f, Source: "faults", Schedule: &ScheduleOf{Seed: sched.Seed, Faults: o.faults, CrashAfterCommit: crashAt}}
}

// stoppedShort: the rehearsal's deadline stopped it, which is no finding.
func stoppedShort(o *outcome) bool {
	return o.end != nil && o.end.Error != nil && o.end.Error.Reason == "deadline"
}

// sameEnd: both ended with the same status, result and error.
func sameEnd(a, b *store.Status) bool {
	if a.Status != b.Status || (a.Error == nil) != (b.Error == nil) {
		return false
	}
	if a.Error != nil && a.Error.Text() != b.Error.Text() {
		return false
	}
	var ra, rb any
	_ = json.Unmarshal(a.Result, &ra)
	_ = json.Unmarshal(b.Result, &rb)
	return reflect.DeepEqual(withoutGenerations(ra), withoutGenerations(rb))
}

// withoutGenerations is a result with the generation taken out of the fake backend's thread
// and turn ids in every CallResult in it (fake-c3-a2 is fake-c3, fake-c3-a2-t1 fake-c3-t1).
// Which generation of a call ran is the engine's, not the workflow's: a crash that loses the
// held row a pause was writing for a call waiting for the pool (or the call's prepared row)
// makes the resume run the call as its first generation where the run without the crash ran
// it as its second, which no workflow can depend on (a real host's ids differ on every run).
func withoutGenerations(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = withoutGenerations(e)
		}
		if meta, ok := out["meta"].(map[string]any); ok && out["callId"] != nil {
			if id, ok := meta["threadId"].(string); ok {
				meta["threadId"] = generationRE.ReplaceAllString(id, "$1")
			}
			if ids, ok := meta["turnIds"].([]any); ok {
				for i, id := range ids {
					if s, ok := id.(string); ok {
						ids[i] = generationRE.ReplaceAllString(s, "$1")
					}
				}
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutGenerations(e)
		}
		return out
	}
	return v
}

// generationRE finds the generation in a fake thread or turn id.
var generationRE = regexp.MustCompile(`^(fake-c\d+)-a\d+`)

// resultDifference is where two completed runs' results first differ (a JS path such as
// .review.meta.turnId, or (the result) at the top), with each side's value there, clipped: a
// long result cut at 200 characters hides what differs deep inside it.
func resultDifference(crashed, base *store.Status) (at, after, without string, ok bool) {
	if crashed.Error != nil || base.Error != nil || crashed.Status != base.Status {
		return "", "", "", false
	}
	var a, b any
	if json.Unmarshal(crashed.Result, &a) != nil || json.Unmarshal(base.Result, &b) != nil {
		return "", "", "", false
	}
	at, va, vb, ok := firstDifference(withoutGenerations(a), withoutGenerations(b), "")
	if !ok {
		return "", "", "", false
	}
	if at == "" {
		at = "(the result)"
	}
	return at, clip(jsonText(va)), clip(jsonText(vb)), true
}

// firstDifference walks a and b together, object members in sorted order, and returns the
// path of the first place they differ with the value on each side.
func firstDifference(a, b any, path string) (string, any, any, bool) {
	switch av := a.(type) {
	case map[string]any:
		bv, isObj := b.(map[string]any)
		if !isObj {
			break
		}
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, both := av[k]; !both {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			x, inA := av[k]
			y, inB := bv[k]
			if !inA || !inB {
				return path + memberPath(k), orAbsent(x, inA), orAbsent(y, inB), true
			}
			if p, da, db, ok := firstDifference(x, y, path+memberPath(k)); ok {
				return p, da, db, true
			}
		}
		return "", nil, nil, false
	case []any:
		bv, isArr := b.([]any)
		if !isArr || len(av) != len(bv) {
			break
		}
		for i := range av {
			if p, da, db, ok := firstDifference(av[i], bv[i], fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, da, db, true
			}
		}
		return "", nil, nil, false
	}
	if reflect.DeepEqual(a, b) {
		return "", nil, nil, false
	}
	return path, a, b, true
}

// memberPath is k as a JS member access: .name, or ["odd key"].
func memberPath(k string) string {
	if identRE.MatchString(k) {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

var identRE = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// absent stands for a member one side lacks.
type absent struct{}

func orAbsent(v any, present bool) any {
	if !present {
		return absent{}
	}
	return v
}

// jsonText is v as JSON, or (absent).
func jsonText(v any) string {
	if _, ok := v.(absent); ok {
		return "(absent)"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// endOf is a run's end in a few words: its status and result, or its error.
func endOf(st *store.Status) string {
	if st.Error != nil {
		return fmt.Sprintf("%s (%s)", st.Status, clip(st.Error.Text()))
	}
	return fmt.Sprintf("%s with %s", st.Status, clip(string(st.Result)))
}

func clip(s string) string {
	if len(s) <= 200 {
		return s
	}
	cut := 200
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut-- // never in the middle of a character
	}
	return s[:cut] + "…"
}

// faults rehearses the workflow under n schedules from seed on, several at once, and adds
// what each found to the report in the schedules' order.
func (r *Report) faults(ctx context.Context, c *faultCheck, n int, seed uint64) error {
	found := make([][]Finding, n)
	crashed := make([]bool, n)
	errsOf := make([]error, n)
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			found[i], crashed[i], errsOf[i] = c.scheduleFindings(ctx, Schedule{Seed: seed + uint64(i)})
		}()
	}
	wg.Wait()
	r.Faults = &FaultsReport{Schedules: n, Seed: seed, Misbehaved: []uint64{}}
	for i := range n {
		if errsOf[i] != nil {
			return errsOf[i]
		}
		if crashed[i] {
			r.Faults.Crashed++
		}
		if len(found[i]) > 0 {
			r.Faults.Misbehaved = append(r.Faults.Misbehaved, seed+uint64(i))
		}
		for _, f := range found[i] {
			r.add(f)
		}
	}
	return nil
}
