package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/crw-dev/crw/engine/diagnosis"
	"github.com/crw-dev/crw/engine/offline"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Reconciled is what Recover did with a verdict.
type Reconciled struct {
	Run     string `json:"run"`
	Call    string `json:"call"`
	Verdict string `json:"verdict"`
	// Node is the node whose recovery hold the verdict releases; HeldBy the other unknown
	// calls of the node that still hold it, until they have verdicts too.
	Node   string   `json:"node"`
	HeldBy []string `json:"held_by"`
	// Journaled: the verdict is in the run's journal; else the run's live process takes it.
	Journaled bool `json:"journaled"`
	// PID is the process a resume started (0: none was).
	PID int `json:"pid,omitempty"`
	// RunEnded: the run had ended; the verdict is recorded and nothing resumes.
	RunEnded bool `json:"run_ended,omitempty"`
}

// Recover journals an operator's verdict on a call that ended unknown (reconcile_effect):
// applied (the effect happened; its output, when given, is recorded) or not_applied (it did
// not: the node's next call may send again). The unknown call's own rows are never rewritten,
// and it stays unknown for the script; the verdict releases its node's recovery hold for the
// calls after it. A live run's process is left the verdict and journals it itself. An applied
// verdict's output must satisfy the call's schema. A run no process holds whose workflow waits
// for the verdict (crw.effect) is resumed, with resume. A run that has ended takes the verdict
// too (the effect stays unresolved until someone verifies it) and is never resumed.
func (s *Service) Recover(ctx context.Context, run, call string, v decisions.Verdict, by string, resume bool) (*Reconciled, error) {
	if v.Verdict != decisions.VerdictApplied && v.Verdict != decisions.VerdictNotApplied {
		if v.Verdict == "" {
			return nil, errs.Field("verdict", "", "missing: give the verdict, applied (the effect happened) or not_applied (it did not)")
		}
		return nil, errs.Field("verdict", "", "%q is neither applied (the effect happened) nor not_applied (it did not)", v.Verdict)
	}
	if v.Verdict == decisions.VerdictNotApplied && len(v.Output) > 0 {
		return nil, errs.Field("output", "", "only with the verdict applied: an effect that did not happen has no output")
	}
	if len(v.Output) > MaxAnswer {
		return nil, errs.Field("output", "", "%d bytes; the limit is %d", len(v.Output), MaxAnswer)
	}
	if len(v.Output) > 0 && !json.Valid(v.Output) {
		return nil, errs.Field("output", "", "not one JSON value (a call without a schema answers a JSON string)")
	}
	st, err := s.ActingStatus(ctx, run)
	if err != nil {
		return nil, err
	}
	node, end, reconciled, unknown, err := s.unknownOutcome(ctx, run, call)
	if err != nil {
		return nil, err
	}
	switch {
	case node == "":
		return nil, errs.New(errs.InvalidRequest, "run %s has no call %s", run, call)
	case end == nil || end.Type != journal.TypeOutcomeUnknown:
		what := "has no outcome yet"
		if end != nil {
			what = "ended " + string(journal.StatusOf(end.Type))
		}
		return nil, errs.New(errs.InvalidRequest, "call %s of run %s %s: only an unknown outcome is reconciled", call, run, what)
	case reconciled != nil:
		return nil, errs.New(errs.InvalidRequest, "call %s of run %s was reconciled already (%s, by %s)", call, run, reconciled.Verdict, offline.OrSomeone(reconciled.By))
	}
	if len(v.Output) > 0 {
		doc, err := checkOutput(end, v.Output)
		if err != nil {
			return nil, err
		}
		v.Output = doc
	}
	out := &Reconciled{Run: run, Call: call, Verdict: v.Verdict, Node: node, RunEnded: st.State == store.StateEnded,
		HeldBy: slices.DeleteFunc(slices.Clone(unknown[node]), func(c string) bool { return c == call })}
	if out.HeldBy == nil {
		out.HeldBy = []string{}
	}
	if resume && waitsFor(st, decisions.EffectPrefix+call) {
		if _, err := s.Env(ctx, run); err != nil {
			return nil, err
		}
	}
	value, _ := json.Marshal(v)
	a := store.Answer{ID: decisions.EffectPrefix + call, Value: value, By: by}
	if _, held, err := s.Store.Published(ctx, run); err != nil {
		return nil, err
	} else if held {
		return s.verdictLive(ctx, out, a)
	}
	// One verdict a call, whatever was journaled since the rows were read.
	err = s.writeOffline(ctx, run, func(w *offline.Writer) error { return w.Reconcile(call, v, by) })
	if errors.Is(err, store.ErrHeld) {
		return s.verdictLive(ctx, out, a)
	}
	if err != nil {
		return nil, err
	}
	out.Journaled = true
	if resume && waitsFor(st, decisions.EffectPrefix+call) {
		// The workflow waits for this verdict (crw.effect): it goes on, as after an answer.
		pid, err := s.Start(ctx, run)
		if err != nil {
			return out, err
		}
		out.PID = pid
	}
	return out, nil
}

// unknownOutcome reads what the journal says of call: its node, its terminal row, the verdict
// given on it, and by node the unknown outcomes no verdict decided yet.
func (s *Service) unknownOutcome(ctx context.Context, run, call string) (node string, end, reconciled *journal.Row, unknown map[string][]string, err error) {
	nodes := map[string]string{} // call → node
	unknown = map[string][]string{}
	err = s.Store.Rows(ctx, run, 1, func(r *journal.Row) error {
		switch {
		case r.Type == journal.TypePrepared:
			nodes[r.Call] = r.Node
			if r.Call == call {
				node, end = r.Node, nil
			}
		case journal.IsTerminal(r.Type):
			if r.Type == journal.TypeOutcomeUnknown {
				unknown[nodes[r.Call]] = append(unknown[nodes[r.Call]], r.Call)
			}
			if r.Call == call {
				cp := *r
				end = &cp
			}
		case r.Type == journal.TypeEffectReconciled:
			n := nodes[r.Effect]
			unknown[n] = slices.DeleteFunc(unknown[n], func(c string) bool { return c == r.Effect })
			if r.Effect == call {
				cp := *r
				reconciled = &cp
			}
		}
		return nil
	})
	return node, end, reconciled, unknown, err
}

// waitsFor reports whether a run's process ended waiting for decision id.
func waitsFor(st *store.Status, id string) bool {
	if st.State != store.StateWaitingDecision {
		return false
	}
	for _, d := range st.Decisions {
		if d.ID == id {
			return true
		}
	}
	return false
}

// checkOutput checks an applied verdict's output against the schema the lost turn answered
// to, which its outcome_unknown row records: a call without one answers a JSON string. It
// returns the output as the journal keeps it.
func checkOutput(end *journal.Row, output json.RawMessage) (json.RawMessage, error) {
	doc, _, err := schema.ParseAnswer(string(output))
	if err != nil {
		return nil, errs.Field("output", "", "%v", err)
	}
	if len(end.Schema) == 0 {
		if end.SchemaDigest == "" && (len(doc) == 0 || doc[0] != '"') {
			return nil, errs.Field("output", "", "call %s has no schema, so its answer is text: give it as one JSON string", end.Call)
		}
		return doc, nil // journaled before its row kept the schema: taken as given
	}
	v, err := schema.Compile(end.Schema)
	if err != nil {
		return nil, errs.New(errs.IncompatibleSchema, "call %s: its recorded schema: %v", end.Call, err)
	}
	if err := v.Validate(doc); err != nil {
		return nil, errs.Field("output", "", "it does not satisfy the schema of call %s: %v", end.Call, err)
	}
	return doc, nil
}

// verdictLive leaves the verdict for the run's live process and waits a while to see it
// journaled.
func (s *Service) verdictLive(ctx context.Context, out *Reconciled, a store.Answer) (*Reconciled, error) {
	got, err := s.awaitTaken(ctx, out.Run, a, func(r *journal.Row) bool {
		return r.Type == journal.TypeEffectReconciled && r.Effect == out.Call
	})
	if err != nil || got == nil {
		return out, err
	}
	var mine decisions.Verdict
	_ = json.Unmarshal(a.Value, &mine)
	theirs := decisions.ReconciledRow(out.Call, mine, a.By)
	if got.Verdict != theirs.Verdict || got.By != a.By || got.OutputDigest != theirs.OutputDigest {
		return nil, errs.New(errs.InvalidRequest, "call %s of run %s was reconciled already, by another verdict (%s, by %s)",
			out.Call, out.Run, got.Verdict, offline.OrSomeone(got.By))
	}
	out.Journaled = true
	return out, nil
}

// MaxEffects bounds what Effects lists.
const MaxEffects = 10000

// Effects lists the unresolved effects of the runs given (every run when none is), at most
// limit of them, those of runs that have ended too (marked: a verdict on one resumes
// nothing). Each run's are read from the index its journal keeps beside its summary, not from
// its rows.
func (s *Service) Effects(ctx context.Context, limit int, runs ...string) ([]diagnosis.Effect, error) {
	if limit < 1 || limit > MaxEffects {
		return nil, errs.Field("limit", "", "1 to %d, got %d", MaxEffects, limit)
	}
	all := len(runs) == 0
	if all {
		ids, err := s.Store.List(ctx)
		if err != nil {
			return nil, err
		}
		runs = ids
	}
	out := []diagnosis.Effect{}
	for _, run := range runs {
		st, err := s.Status(ctx, run)
		if err != nil {
			if !all {
				return nil, err
			}
			continue // an unreadable run is listed unreadable by crw flow list
		}
		idx, err := s.Store.Outstanding(ctx, run, limit-len(out))
		if err != nil {
			if !all {
				return nil, err
			}
			continue
		}
		effects, _ := diagnosis.Effects(st, idx, limit-len(out))
		out = append(out, effects...)
		if len(out) == limit {
			return out, nil
		}
	}
	return out, nil
}
