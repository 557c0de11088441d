package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crw-dev/crw/engine/runner"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Reconciled is what Recover did with a verdict.
type Reconciled struct {
	Run     string `json:"run"`
	Call    string `json:"call"`
	Verdict string `json:"verdict"`
	// Node is the node whose recovery hold the verdict releases.
	Node string `json:"node"`
	// Journaled: the verdict is in the run's journal; else the run's live process takes it.
	Journaled bool `json:"journaled"`
}

// Recover journals an operator's verdict on a call that ended unknown (reconcile_effect):
// applied (the effect happened; its output, when given, is recorded) or not_applied (it did
// not: the node's next call may send again). The unknown call's own rows are never rewritten,
// and it stays unknown for the script; the verdict releases its node's recovery hold for the
// calls after it. A live run's process is left the verdict and journals it itself.
func (s *Service) Recover(ctx context.Context, run, call string, v runner.Verdict, by string) (*Reconciled, error) {
	if v.Verdict != runner.VerdictApplied && v.Verdict != runner.VerdictNotApplied {
		return nil, errs.New(errs.InvalidRequest, "recover: give the verdict: --applied (the effect happened) or --not-applied (it did not)")
	}
	if v.Verdict == runner.VerdictNotApplied && len(v.Output) > 0 {
		return nil, errs.New(errs.InvalidRequest, "recover: --output goes with --applied: an effect that did not happen has no output")
	}
	if len(v.Output) > MaxAnswer {
		return nil, errs.New(errs.InvalidRequest, "--output: %d bytes; the limit is %d", len(v.Output), MaxAnswer)
	}
	if len(v.Output) > 0 && !json.Valid(v.Output) {
		return nil, errs.New(errs.InvalidRequest, "--output: not one JSON value (a call without a schema answers a JSON string)")
	}
	st, err := s.Status(ctx, run)
	if err != nil {
		return nil, err
	}
	if st.State == store.StateEnded {
		return nil, errs.New(errs.RunUnavailable, "run %s has ended (%s): nothing of it waits for a verdict", run, st.Status)
	}
	var end, reconciled *journal.Row
	node := ""
	err = s.Store.Rows(ctx, run, 1, func(r *journal.Row) error {
		switch {
		case r.Call == call && r.Type == journal.TypePrepared:
			node, end = r.Node, nil
		case r.Call == call && journal.IsTerminal(r.Type):
			cp := *r
			end = &cp
		case r.Type == journal.TypeEffectReconciled && r.Effect == call:
			cp := *r
			reconciled = &cp
		}
		return nil
	})
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
		return nil, errs.New(errs.InvalidRequest, "call %s of run %s was reconciled already (%s, by %s)", call, run, reconciled.Verdict, orSomeone(reconciled.By))
	}
	out := &Reconciled{Run: run, Call: call, Verdict: v.Verdict, Node: node}
	value, _ := json.Marshal(v)
	a := store.Answer{ID: runner.EffectPrefix + call, Value: value, By: by}
	if _, held, err := s.Store.Published(ctx, run); err != nil {
		return nil, err
	} else if held {
		return s.verdictLive(ctx, out, a)
	}
	lease, err := s.Store.Acquire(ctx, run)
	if errors.Is(err, store.ErrHeld) {
		return s.verdictLive(ctx, out, a)
	}
	if err != nil {
		return nil, err
	}
	_, werr := lease.Journal().Write(runner.ReconciledRow(call, v, by))
	if err := lease.Release(); werr == nil {
		werr = err
	}
	if werr != nil {
		return nil, werr
	}
	out.Journaled = true
	return out, nil
}

// verdictLive leaves the verdict for the run's live process and waits a while to see it
// journaled.
func (s *Service) verdictLive(ctx context.Context, out *Reconciled, a store.Answer) (*Reconciled, error) {
	if err := s.Store.PutAnswer(ctx, out.Run, a); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(answerWait)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return out, nil
		case <-time.After(50 * time.Millisecond):
		}
		found := false
		_ = s.Store.Rows(ctx, out.Run, 1, func(r *journal.Row) error {
			found = found || (r.Type == journal.TypeEffectReconciled && r.Effect == out.Call)
			return nil
		})
		if found {
			out.Journaled = true
			return out, nil
		}
	}
	return out, nil
}

// Effect is an effect whose outcome is unknown and that no verdict decided: what to verify,
// where, and the command that reconciles it.
type Effect struct {
	Run    string   `json:"run"`
	Call   string   `json:"call"`
	Kind   string   `json:"kind"` // call (a turn's answer was lost) or commit (its result was not recorded)
	Node   string   `json:"node"`
	Role   string   `json:"role,omitempty"`
	Reason string   `json:"reason,omitempty"`
	Thread string   `json:"thread,omitempty"`
	Turns  []string `json:"turns,omitempty"`
	Ref    string   `json:"ref,omitempty"`
	Verify string   `json:"verify"`
	Then   string   `json:"then"`
}

// Effects lists the unresolved effects of the runs given (every run when none is).
func (s *Service) Effects(ctx context.Context, runs ...string) ([]Effect, error) {
	if len(runs) == 0 {
		ids, err := s.Store.List(ctx)
		if err != nil {
			return nil, err
		}
		runs = ids
	}
	out := []Effect{}
	for _, run := range runs {
		rows, err := s.Rows(ctx, run)
		if err != nil {
			if len(runs) == 1 {
				return nil, err
			}
			continue // an unreadable run is listed unreadable by crw flow list
		}
		out = append(out, effectsOf(run, rows)...)
	}
	return out, nil
}

func effectsOf(run string, rows []journal.Row) []Effect {
	type callState struct {
		node, role, thread string
		turns              []string
		end                *journal.Row
	}
	calls := map[string]*callState{}
	var order []string
	reconciled := map[string]bool{}
	var commits []*journal.Row
	for i := range rows {
		r := &rows[i]
		switch {
		case r.Type == journal.TypePrepared:
			if calls[r.Call] == nil {
				order = append(order, r.Call)
			}
			calls[r.Call] = &callState{node: r.Node, role: r.Role}
		case r.Type == journal.TypeThreadStarted && calls[r.Call] != nil:
			calls[r.Call].thread = r.ThreadID
		case r.Type == journal.TypeTurnStarted && calls[r.Call] != nil:
			calls[r.Call].turns = append(calls[r.Call].turns, r.TurnID)
		case journal.IsTerminal(r.Type) && calls[r.Call] != nil:
			calls[r.Call].end = r
		case r.Type == journal.TypeEffectReconciled:
			reconciled[r.Effect] = true
		case r.Type == journal.TypeCommitIntent:
			commits = append(commits, r)
		case r.Type == journal.TypeCommitResult && len(commits) > 0:
			commits = commits[:len(commits)-1]
		}
	}
	var out []Effect
	for _, id := range order {
		c := calls[id]
		if c.end == nil || c.end.Type != journal.TypeOutcomeUnknown || reconciled[id] {
			continue
		}
		out = append(out, Effect{Run: run, Call: id, Kind: "call", Node: c.node, Role: c.role, Reason: c.end.Reason, Thread: c.thread, Turns: c.turns,
			Verify: fmt.Sprintf("whether the host ran the turn of call %s (thread %s, turn %s) and what it answered", id, orNone(c.thread), orNone(last(c.turns))),
			Then:   fmt.Sprintf("crw flow recover %s %s --not-applied, or --applied [--output @FILE]", run, id)})
	}
	for _, in := range commits {
		if in.Status != "" {
			continue // a refusal: nothing was done
		}
		out = append(out, Effect{Run: run, Kind: "commit", Node: in.Node, Ref: in.Ref,
			Verify: fmt.Sprintf("%s: the commit of tree %s on %s, which a resume finishes from its intent", in.Ref, in.Tree, in.Parent),
			Then:   "crw flow resume " + run})
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none recorded"
	}
	return s
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}
