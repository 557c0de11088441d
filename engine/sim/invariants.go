package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// The invariants, by the names a violation reports:
//
//	ends               every run reaches an end once the operator's actions are applied
//	moves_on           the action a run's inspection names moves it on
//	next_action        a run that waits says what moves it on (status, inspect)
//	status_agrees      a process's end, the run's status and its journal say the same
//	pause_not_hidden   a run whose calls a pause held ends its process paused, not waiting
//	process_error      a process stops only for what its fault explains (a crash, a stop)
//	resume_diverges    a resume with the run's own script never diverges
//	journal            one terminal row per call per generation, each turn started once, every
//	                   row of a call a transition of its state machine (callstate.Check)
//	sends_once         the host receives no turn twice
//	summary            the journal's summary equals a recomputation from its rows
//	same_result        an interrupted run ends as the uninterrupted one (no race)
//	shadow_clean       a shadow of the recorded run with its own script finds no difference
//	trace_shadow       the shadow of the run's trace, read a part at a time, reports what the
//	                   shadow of the run does
//	no_failure_from_interrupts  no call fails for a pause, cancel, stop or crash
//	holds              a verdict releases its node; after applied the same call is not sent
//	repo_clean         an ended or deleted run leaves no worktree, and no ref outside its own

// checkJournal checks what every journal must hold whenever its process ends.
func (x *execution) checkJournal(ctx context.Context, id string) {
	rows, err := x.svc.Rows(ctx, id)
	if err != nil {
		x.violate("journal", "the journal cannot be read: %v", err)
		return
	}
	x.out.Rows = rows
	for _, p := range enginetest.JournalProblems(rows) {
		x.violate("journal", "%s", p)
	}
	for turn, n := range x.host.Received() {
		if n > 1 {
			x.violate("sends_once", "the host received turn %s %d times", turn, n)
		}
	}
	want, wantIdx, err := journal.SummarizeIndexed(func(fn func(*journal.Row) error) error {
		for i := range rows {
			if err := fn(&rows[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		x.violate("summary", "the rows cannot be summarized: %v", err)
		return
	}
	got, err := x.st.Summary(ctx, id)
	if err != nil {
		x.violate("summary", "the store's summary cannot be read: %v", err)
		return
	}
	if !maps.Equal(want.Calls, got.Calls) || want.Tokens != got.Tokens || want.Status != got.Status || !reflect.DeepEqual(want.Commits, got.Commits) {
		x.violate("summary", "the store says %v, %+v, %q, commits %v; the rows say %v, %+v, %q, commits %v",
			got.Calls, got.Tokens, got.Status, got.Commits, want.Calls, want.Tokens, want.Status, want.Commits)
	}
	gotIdx, err := x.st.Outstanding(ctx, id, 1<<30)
	if err != nil {
		x.violate("summary", "the store's index cannot be read: %v", err)
		return
	}
	wantOut := wantIdx.Outstanding(1 << 30)
	wantOut.Commits = want.Commits
	if !sameOutstanding(wantOut, gotIdx) {
		x.violate("summary", "the store's index says %+v; the rows say %+v", gotIdx, wantOut)
	}
	open, unknown := outstandingOf(rows)
	var gotOpen, gotUnknown []string
	for _, o := range gotIdx.Open {
		gotOpen = append(gotOpen, o.Call)
	}
	for _, u := range gotIdx.Unknown {
		gotUnknown = append(gotUnknown, u.Call)
	}
	if !slices.Equal(open, gotOpen) || !slices.Equal(unknown, gotUnknown) {
		x.violate("summary", "the store's index lists open %v and unknown %v; the rows have open %v and unknown %v", gotOpen, gotUnknown, open, unknown)
	}
}

// sameOutstanding compares two indexes, an empty list as none.
func sameOutstanding(a, b *journal.Outstanding) bool {
	norm := func(o *journal.Outstanding) journal.Outstanding {
		c := *o
		if len(c.Open) == 0 {
			c.Open = nil
		}
		if len(c.Unknown) == 0 {
			c.Unknown = nil
		}
		if len(c.Verdicts) == 0 {
			c.Verdicts = nil
		}
		if len(c.Commits) == 0 {
			c.Commits = nil
		}
		for i := range c.Verdicts {
			c.Verdicts[i].At = c.Verdicts[i].At.UTC()
		}
		return c
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// outstandingOf is what the journal has outstanding, read from its rows as plainly as can be:
// the calls whose newest row of their own is not terminal, and those whose newest terminal
// row is outcome_unknown with no verdict ever given, each in the order of first issue.
func outstandingOf(rows []journal.Row) (open, unknown []string) {
	var order []string
	last := map[string]string{} // call → the type of its newest prepared or terminal row
	verdict := map[string]bool{}
	for _, r := range rows {
		switch {
		case r.Type == journal.TypeEffectReconciled:
			verdict[r.Effect] = true
		case r.Type == journal.TypePrepared:
			if _, seen := last[r.Call]; !seen {
				order = append(order, r.Call)
			}
			last[r.Call] = r.Type
		case journal.IsTerminal(r.Type) && last[r.Call] != "":
			last[r.Call] = r.Type
		}
	}
	slices.SortFunc(order, journal.ByIssue)
	for _, c := range order {
		switch last[c] {
		case journal.TypePrepared:
			open = append(open, c)
		case journal.TypeOutcomeUnknown:
			if !verdict[c] {
				unknown = append(unknown, c)
			}
		}
	}
	return open, unknown
}

// checkEnd checks how a process ended against the run's status.
func (x *execution) checkEnd(ctx context.Context, id string, end *store.Status, err error, st *store.Status) {
	if err != nil {
		code, reason := errOf(err)
		switch {
		case reason == "divergence":
			x.violate("resume_diverges", "a process of the run stopped on a divergence with the run's own script: %v", err)
		case !x.faulty || !expectedStop(err):
			x.violate("process_error", "a process of the run stopped with %s (%s): %v", code, reason, err)
		}
		return
	}
	want := map[store.RunStatus]store.State{store.RunPaused: store.StatePaused, store.RunWaitingDecision: store.StateWaitingDecision,
		store.RunCompleted: store.StateEnded, store.RunFailed: store.StateEnded, store.RunCancelled: store.StateEnded}[end.Status]
	if st.State != want || st.Status != end.Status {
		x.violate("status_agrees", "the process ended %s, and status says %s/%s", end.Status, st.State, st.Status)
	}
	if end.Status == store.RunWaitingDecision {
		for _, c := range pauseHeld(x.out.Rows) {
			x.violate("pause_not_hidden", "the process ended waiting_decision while a pause held call %s", c)
		}
	}
}

// pauseHeld lists the calls a pause held in the run's last process (since its last started
// row): calls an earlier process's pause held wait to be made again, and say nothing of this
// one.
func pauseHeld(rows []journal.Row) []string {
	held := map[string]bool{}
	var order []string
	for _, r := range rows {
		switch {
		case r.Type == journal.TypeStarted:
			held, order = map[string]bool{}, nil
		case r.Type == journal.TypePrepared:
			if _, seen := held[r.Call]; !seen {
				order = append(order, r.Call)
			}
			held[r.Call] = false
		case r.Type == journal.TypeHeld && replay.PauseReasons[r.Reason]:
			held[r.Call] = true
		}
	}
	var out []string
	for _, c := range order {
		if held[c] {
			out = append(out, c)
		}
	}
	return out
}

// finished checks an ended run.
func (x *execution) finished(ctx context.Context, id string) {
	rows := x.out.Rows
	x.checkCallEnds(rows)
	x.checkHolds(rows)
	x.checkRepo(id, false)
	end := x.out.End
	if end.Status != store.RunCompleted && end.Status != store.RunFailed {
		return
	}
	for _, s := range resultLines(end.Result) {
		if strings.Contains(s, "/"+string(errs.UnreconciledEffect)+"/") {
			x.violate("holds", "the workflow was told %q after every unknown outcome of the node had its verdict", s)
		}
	}
	rep, err := x.svc.Shadow(ctx, id, shadow.Options{Script: x.wf})
	if err != nil {
		x.violate("shadow_clean", "the shadow did not run: %v", err)
		return
	}
	if rep.Differs() {
		data, _ := json.Marshal(struct {
			D any `json:"divergences"`
			U any `json:"unmade"`
			N any `json:"new"`
		}{rep.Divergences, rep.Unmade, rep.New})
		x.violate("shadow_clean", "a shadow with the run's own script differs: %s", clip(string(data)))
	}
	if rep.Status != end.Status || (end.Status == store.RunCompleted && !sameJSON(rep.Result, end.Result)) {
		x.violate("shadow_clean", "the shadow ended %s with %s; the run ended %s with %s", rep.Status, clip(string(rep.Result)), end.Status, clip(string(end.Result)))
	}
	x.checkTraceShadow(ctx, id, rep)
}

// correlationID is a diagnostic's correlation id in JSON, which each error makes anew.
var correlationID = regexp.MustCompile(`"correlationId":"[^"]*",?`)

// checkTraceShadow: the shadow of the run's trace (crw flow trace, then shadow --trace), read a
// part at a time and keeping what the case's resumes keep of the calls' rows (the rest read
// again from the file), within the run's limits and without a repository where it had none,
// reports what the shadow of the run itself did.
func (x *execution) checkTraceShadow(ctx context.Context, id string, want *shadow.Report) {
	var trace bytes.Buffer
	if err := journal.Export(&trace, id, x.out.Rows); err != nil {
		x.violate("trace_shadow", "the trace cannot be written: %v", err)
		return
	}
	path := filepath.Join(x.dir, "trace.jsonl")
	if err := os.WriteFile(path, trace.Bytes(), 0o600); err != nil {
		x.violate("trace_shadow", "the trace cannot be written: %v", err)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		x.violate("trace_shadow", "the trace cannot be opened: %v", err)
		return
	}
	defer f.Close()
	spec, err := x.svc.Store.Spec(ctx, id)
	if err != nil {
		x.violate("trace_shadow", "the run's spec cannot be read: %v", err)
		return
	}
	budget := x.c.ReplayBudget
	if budget == 0 {
		budget = replay.KeptBudget // the service's 0
	}
	tf, err := journal.OpenTrace(f)
	var h *replay.History
	if err == nil {
		var traceErr error
		if h, traceErr, err = shadow.ReadTrace(tf, budget); traceErr != nil {
			err = traceErr
		}
	}
	var got *shadow.Report
	if err == nil {
		got, err = x.svc.Shadow(ctx, "", shadow.Options{Script: x.wf, History: h, Trace: tf, Limits: spec.Limits, NoRepository: spec.Repo == ""})
	}
	if err != nil {
		x.violate("trace_shadow", "the shadow of the run's trace did not run: %v", err)
		return
	}
	// Each shadow's error diagnostic has a correlation id of its own.
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(got)
	wantJSON, gotJSON = correlationID.ReplaceAll(wantJSON, nil), correlationID.ReplaceAll(gotJSON, nil)
	if !bytes.Equal(wantJSON, gotJSON) || fmt.Sprint(want.Stop) != fmt.Sprint(got.Stop) {
		x.violate("trace_shadow", "the shadow of the run's trace reported %s (stop %v); that of the run %s (stop %v)", clip(string(gotJSON)), got.Stop, clip(string(wantJSON)), want.Stop)
	}
}

func resultLines(result json.RawMessage) []string {
	var lines []string
	_ = json.Unmarshal(result, &lines)
	return lines
}

// checkCallEnds: no call ends failed for what was no failure of its own: a pause, a cancel, a
// stop or a crash. The case never changes a worktree nor breaks git, so no call's directory
// fails; a host failure is one the answers scripted.
func (x *execution) checkCallEnds(rows []journal.Row) {
	index := map[string]int{}
	for _, r := range rows {
		if r.Type == journal.TypePrepared {
			index[r.Call] = r.Index
			continue
		}
		if !journal.IsTerminal(r.Type) {
			continue
		}
		switch {
		case r.Reason == "worktree_failed" || r.Reason == "restore_snapshot_mismatch":
			x.violate("no_failure_from_interrupts", "call %s ended %s %s: %s", r.Call, r.Type, r.Reason, clip(r.Detail))
		case strings.HasPrefix(r.Reason, "host_") && r.Reason != "host_interrupted_external":
			turns := x.c.Answers[index[r.Call]]
			if len(turns) == 0 || (turns[0].Error == nil && (len(turns) < 2 || turns[1].Error == nil)) {
				x.violate("no_failure_from_interrupts", "call %s (#%d) ended %s %s, which its answers did not script: %s", r.Call, index[r.Call], r.Type, r.Reason, clip(r.Detail))
			}
		case r.Reason == "host_interrupted_external":
			x.violate("no_failure_from_interrupts", "call %s ended held host_interrupted_external: the engine interrupted it and did not say so", r.Call)
		}
	}
}

// checkHolds: seed 002. After an applied verdict on a call, a call asking for the same (role,
// node, prompt, schema) is held recovery_hold and sends no turn; after not_applied it is not
// held for it.
func (x *execution) checkHolds(rows []journal.Row) {
	keys := map[string]replay.EffectKey{} // call → the key of its newest prepared row
	applied := map[replay.EffectKey]string{}
	type gen struct {
		call    string
		key     replay.EffectKey
		applied string // the applied call it asks the same as, when prepared
		turns   int
		end     *journal.Row
	}
	var gens []*gen
	open := map[string]*gen{}
	for i := range rows {
		r := &rows[i]
		switch {
		case r.Type == journal.TypePrepared:
			k := replay.EffectKeyOf(r)
			keys[r.Call] = k
			g := &gen{call: r.Call, key: k, applied: applied[k]}
			gens = append(gens, g)
			open[r.Call] = g
		case r.Type == journal.TypeEffectReconciled && r.Verdict == "applied":
			if _, had := applied[keys[r.Effect]]; !had {
				applied[keys[r.Effect]] = r.Effect
			}
		case r.Type == journal.TypeTurnStarted && open[r.Call] != nil:
			open[r.Call].turns++
		case journal.IsTerminal(r.Type) && open[r.Call] != nil:
			open[r.Call].end = r
			delete(open, r.Call)
		}
	}
	for _, g := range gens {
		if g.applied == "" || g.end == nil || g.call == g.applied {
			continue
		}
		if g.turns > 0 {
			x.violate("holds", "call %s asks for what call %s asked, whose effect was applied, and sent a turn", g.call, g.applied)
		}
		if g.end.Type == journal.TypeHeld && replay.PauseReasons[g.end.Reason] {
			continue
		}
		if g.end.Type != journal.TypeHeld || g.end.Reason != "recovery_hold" {
			x.violate("holds", "call %s asks for what call %s asked, whose effect was applied, and ended %s %s", g.call, g.applied, g.end.Type, g.end.Reason)
		}
	}
}

// checkRepo: the repository holds no worktree but its own checkout, nothing locked, and no
// ref under refs/crw/ outside the run's own (none at all once the run is deleted).
func (x *execution) checkRepo(id string, deleted bool) {
	if x.repo == "" {
		return
	}
	list, err := gitOut(x.repo, "worktree", "list", "--porcelain")
	if err != nil {
		x.violate("repo_clean", "%v", err)
		return
	}
	if n := strings.Count(list, "worktree "); n != 1 || strings.Contains(list, "\nlocked") {
		if x.keptForAPerson() {
			return
		}
		x.violate("repo_clean", "the run left worktrees in its repository: %s", clip(list))
	}
	refs, err := gitOut(x.repo, "for-each-ref", "--format=%(refname)", "refs/crw/")
	if err != nil {
		x.violate("repo_clean", "%v", err)
		return
	}
	own := "refs/crw/flow/" + id + "/"
	for _, ref := range strings.Fields(refs) {
		if deleted || !strings.HasPrefix(ref, own) {
			x.violate("repo_clean", "ref %s is left in the repository", ref)
		}
	}
}

// keptForAPerson reports whether the run kept a worktree a restore found changed (it is left
// for a person to look at): the simulator never changes one, so it says so too.
func (x *execution) keptForAPerson() bool {
	for _, r := range x.out.Rows {
		if r.Reason == "restore_snapshot_mismatch" {
			return true
		}
	}
	return false
}

// sameEnd: a run whose faults interrupted it and that was resumed ends as the same run
// uninterrupted, for a workflow without races between calls.
func sameEnd(c *Case, ref, faulty *Outcome) *Violation {
	if c.Racy() || ref.End == nil || faulty.End == nil || c.Faults.CancelAfter > 0 {
		return nil
	}
	r, f := ref.End, faulty.End
	if f.Status == store.RunFailed && len(pausedEver(faulty.Rows)) > 0 {
		// The workflow threw on a result a pause held (it read what a held call does not
		// have): the run ended there, as its workflow decided; crw flow check --faults is
		// what tells an author of it.
		return nil
	}
	switch {
	case r.Status != f.Status:
	case r.Status == store.RunCompleted && !sameJSON(r.Result, f.Result):
	case r.Status == store.RunFailed && (r.Error == nil) != (f.Error == nil):
	case r.Status == store.RunFailed && r.Error != nil && r.Error.Text() != f.Error.Text():
	default:
		return nil
	}
	return &Violation{"same_result", fmt.Sprintf("uninterrupted: %s %s %s; interrupted: %s %s %s",
		r.Status, clip(string(r.Result)), errText(r.Error), f.Status, clip(string(f.Result)), errText(f.Error))}
}

func errText(e *journal.RunError) string {
	if e == nil {
		return ""
	}
	return "(" + e.Text() + ")"
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
}

func clip(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}

// RowsText is a journal's rows, one short line each, for a report.
func RowsText(rows []journal.Row) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%4d %-22s %-4s", r.Seq, r.Type, r.Call)
		if r.Reason != "" {
			fmt.Fprintf(&b, " %s", r.Reason)
		}
		if r.DecisionID != "" {
			fmt.Fprintf(&b, " %s", r.DecisionID)
		}
		if r.Status != "" {
			fmt.Fprintf(&b, " %s", r.Status)
		}
		if r.Type == journal.TypePrepared {
			fmt.Fprintf(&b, " #%d %s/%s", r.Index, r.Role, r.Node)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// pausedEver lists the calls a pause held in any process of the run.
func pausedEver(rows []journal.Row) []string {
	var out []string
	for _, r := range rows {
		if r.Type == journal.TypeHeld && replay.PauseReasons[r.Reason] {
			out = append(out, r.Call)
		}
	}
	return out
}
