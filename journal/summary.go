package journal

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Summary is what status and list show of a run without reading its rows: a fold of every row
// up to LastSeq. A journal's writer folds each commit's rows into it and stores it with them
// (in the same bbolt transaction, under the same lock in memory), so it never lags or leads the
// rows it covers, a crash included.
type Summary struct {
	LastSeq uint64 `json:"last_seq"` // the last row folded in; 0 for an empty journal
	// LastStart is the seq of the last started row, where the rows of the run's last process
	// begin (0 before any; a summary of an earlier crw without it reads as 0).
	LastStart uint64 `json:"last_start,omitempty"`
	// From the last ended row: "" before any, and again once a process took a run that had
	// ended paused or waiting (it is under way, or crashed).
	Status string          `json:"status,omitempty"`
	Ended  time.Time       `json:"ended,omitzero"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RunError       `json:"error,omitempty"`
	// Calls counts the calls by the status of their newest attempt's last terminal row.
	Calls  map[CallStatus]int `json:"calls"`
	Tokens Tokens             `json:"tokens"` // every terminal row's, as the timeline adds them
	// Decisions are the decisions the workflow asked for that have no answer yet, oldest first.
	Decisions []PendingDecision `json:"decisions,omitempty"`
	// Paused is what paused a run whose last ended row is paused (nil when that row does not
	// say: a journal of an earlier crw).
	Paused *Paused `json:"paused,omitempty"`
	// Commits are the commit intents no commit_result followed, oldest first: what a resume
	// finishes (refusals, which do nothing, are not kept).
	Commits []CommitIntent `json:"commits,omitempty"`
	// Workflow is the workflow the last resume_changed row that named one gave: what the run
	// goes on with ("": its spec's).
	Workflow string `json:"workflow,omitempty"`
}

// PendingDecision is a decision a run waits for: crw.decide's id and question, or an operator's
// verdict a workflow waits for (crw.effect), its id VerdictPrefix and the call.
type PendingDecision struct {
	ID       string `json:"id"`
	Question string `json:"question"`
}

// VerdictPrefix starts the id of a verdict waited for as a decision: effect/<call>.
const VerdictPrefix = "effect/"

// NewSummary is the summary of an empty journal.
func NewSummary() *Summary { return &Summary{Calls: map[CallStatus]int{}} }

// Clone returns a copy that folding into does not change s.
func (s *Summary) Clone() *Summary {
	c := *s
	c.Decisions = append([]PendingDecision(nil), s.Decisions...)
	c.Commits = slices.Clone(s.Commits)
	if s.Paused != nil {
		p := *s.Paused
		c.Paused = &p
	}
	c.Calls = make(map[CallStatus]int, len(s.Calls))
	for k, v := range s.Calls {
		c.Calls[k] = v
	}
	return &c
}

// CallStates is where a Summary's fold keeps what it must know of each call: whether it was
// prepared, and the status of its newest attempt's terminal row. A store keeps them beside the
// summary (a bbolt bucket), so the fold holds nothing per call in memory.
type CallStates interface {
	// CallState returns whether the call was prepared and its status ("" while its newest
	// attempt has no terminal row).
	CallState(call string) (prepared bool, status CallStatus, err error)
	// SetCallState records that the call was prepared and its status now.
	SetCallState(call string, status CallStatus) error
}

// MapCallStates keeps call states in memory.
type MapCallStates map[string]CallStatus

// CallState implements CallStates.
func (m MapCallStates) CallState(call string) (bool, CallStatus, error) {
	st, ok := m[call]
	return ok, st, nil
}

// SetCallState implements CallStates.
func (m MapCallStates) SetCallState(call string, status CallStatus) error {
	m[call] = status
	return nil
}

// SummaryPart is what Summary.Add reads of a row, kept small: a writer holds one for every row
// it buffered until the commit that folds it in.
type SummaryPart struct {
	Seq    uint64
	Type   string
	Call   string
	Tokens *Tokens // a terminal row's
	// Row is what Add reads of the row itself: an ended row's status, time, result and error;
	// a resume_changed row's workflow.
	Row      *Row
	Decision *PendingDecision
	Index    *IndexPart // what the Index keeps of a call's rows, a verdict, a commit
}

// IndexPart is what the Index's fold reads of a prepared row (Node, Role), a thread_started
// (Thread), a turn_started (Turn), an outcome_unknown (Reason), an effect_reconciled
// (Verdict) and a commit_intent that is no refusal (Commit).
type IndexPart struct {
	Node, Role, Thread, Turn, Reason string
	Verdict                          *Verdict
	Commit                           *CommitIntent
}

// ForSummary is the part of r that Add reads.
func (r *Row) ForSummary() SummaryPart {
	out := SummaryPart{Seq: r.Seq, Type: r.Type, Call: r.Call}
	switch {
	case r.Type == TypeEnded:
		out.Row = &Row{Status: r.Status, At: r.At, Result: plainResult(r.Result), Error: r.Error}
		if rare := r.Rares(); len(rare.Awaited) > 0 || rare.Paused != nil {
			out.Row.Rare = &Rare{Awaited: rare.Awaited, Paused: rare.Paused}
		}
	case IsTerminal(r.Type) && r.Tokens != nil:
		tokens := *r.Tokens
		out.Tokens = &tokens
	case r.Type == TypeDecisionRequested:
		out.Decision = &PendingDecision{ID: r.DecisionID, Question: r.Question}
	case r.Type == TypeDecisionAnswered:
		out.Decision = &PendingDecision{ID: r.DecisionID}
	case r.Type == TypeResumeChanged && r.Workflow != "":
		out.Row = &Row{Workflow: r.Workflow}
	case r.Type == TypeEffectReconciled:
		out.Decision = &PendingDecision{ID: VerdictPrefix + r.Effect}
		v := &Verdict{Seq: r.Seq, Call: r.Effect, Verdict: r.Verdict, By: r.By, At: r.At, OutputDigest: r.OutputDigest}
		if len(r.Output) > MaxVerdictOutput {
			v.Clipped = true
		} else if len(r.Output) > 0 {
			// As the row's own encoding has it (compact, HTML-escaped), so the index reads as
			// a fold of the rows read back does.
			v.Output, _ = json.Marshal(r.Output)
		}
		out.Index = &IndexPart{Verdict: v}
	case r.Type == TypePrepared:
		out.Index = &IndexPart{Node: r.Node, Role: r.Role}
	case r.Type == TypeThreadStarted:
		out.Index = &IndexPart{Thread: r.ThreadID}
	case r.Type == TypeTurnStarted:
		out.Index = &IndexPart{Turn: r.TurnID}
	case r.Type == TypeCommitIntent && r.Status == "":
		out.Index = &IndexPart{Commit: &CommitIntent{Node: r.Node, Ref: r.Ref, Tree: r.Tree, Parent: r.Parent}}
	}
	if r.Type == TypeOutcomeUnknown {
		out.Index = &IndexPart{Reason: r.Reason}
	}
	return out
}

// await adds d to the decisions waited for, once; a decision asked again (its question reads
// otherwise after a resume) keeps its place with the newest question.
func (s *Summary) await(d PendingDecision) {
	for i, have := range s.Decisions {
		if have.ID == d.ID {
			if d.Question != "" {
				s.Decisions[i].Question = d.Question
			}
			return
		}
	}
	s.Decisions = append(s.Decisions, d)
}

// Add folds the next row into s, counting calls as a timeline does: a new attempt of a call (a
// prepared row again) takes back its earlier outcome, and a later terminal row of an attempt
// (superseded) replaces the earlier one. Rows of calls never prepared count for nothing.
func (s *Summary) Add(r SummaryPart, calls Index) error {
	s.LastSeq = r.Seq
	if err := s.index(r, calls); err != nil {
		return err
	}
	switch {
	case r.Type == TypeEnded:
		row := r.Row
		if row == nil {
			row = &Row{}
		}
		e := row.AsEnded()
		s.Status, s.Ended, s.Result, s.Error, s.Paused = e.Status, row.At, e.Result, e.Error, nil
		if p := e.Paused; p != nil && e.Status == "paused" {
			cp := *p
			s.Paused = &cp
		}
		if e.Status != "paused" && e.Status != "waiting_decision" {
			s.Decisions = nil // a run that ended waits for nothing
		}
		for _, d := range e.Awaited {
			s.await(d)
		}
	case r.Type == TypeStarted:
		s.LastStart = r.Seq
		// A process took the run after it ended paused or waiting: it is under way again (or
		// crashed, when that process died), whatever the earlier process ended with.
		if s.Status == "paused" || s.Status == "waiting_decision" {
			s.Status, s.Ended, s.Result, s.Error, s.Paused = "", time.Time{}, nil, nil, nil
			s.Decisions = slices.DeleteFunc(s.Decisions, func(d PendingDecision) bool { return strings.HasPrefix(d.ID, VerdictPrefix) })
		}
	case r.Type == TypeResumeChanged && r.Row != nil:
		s.Workflow = r.Row.Workflow
	case r.Type == TypeDecisionRequested && r.Decision != nil:
		s.await(*r.Decision)
	case (r.Type == TypeDecisionAnswered || r.Type == TypeEffectReconciled) && r.Decision != nil:
		for i, d := range s.Decisions {
			if d.ID == r.Decision.ID {
				s.Decisions = append(s.Decisions[:i:i], s.Decisions[i+1:]...)
				break
			}
		}
	case r.Call == "" || r.Type == TypeEscalation || r.Type == TypeWarning:
	case r.Type == TypePrepared:
		prepared, old, err := calls.CallState(r.Call)
		if err != nil {
			return err
		}
		if prepared && old != "" {
			s.uncount(old)
		}
		if !prepared || old != "" {
			return calls.SetCallState(r.Call, "")
		}
	case IsTerminal(r.Type):
		prepared, old, err := calls.CallState(r.Call)
		if err != nil || !prepared {
			return err
		}
		if old != "" {
			s.uncount(old)
		}
		status := StatusOf(r.Type)
		s.Calls[status]++
		if r.Tokens != nil {
			s.Tokens = s.Tokens.Add(*r.Tokens)
		}
		return calls.SetCallState(r.Call, status)
	}
	return nil
}

// index folds r into what the Index keeps, as crw flow inspect's fold over the rows has it: a
// call's record from its prepared row until its terminal row, an unknown outcome until a new
// attempt, another outcome or a verdict (which stays: the call needs no other), every verdict,
// and the commit intents until a commit_result (the newest intent's).
func (s *Summary) index(r SummaryPart, idx Index) error {
	part := r.Index
	if part == nil {
		part = &IndexPart{}
	}
	switch {
	case r.Type == TypeEffectReconciled && part.Verdict != nil:
		u, err := idx.Unknown(part.Verdict.Call)
		if err != nil {
			return err
		}
		if u == nil {
			u = &UnknownCall{OpenCall: OpenCall{Call: part.Verdict.Call}}
		}
		u.Reconciled = true
		if err := idx.SetUnknown(part.Verdict.Call, u); err != nil {
			return err
		}
		return idx.AddVerdict(*part.Verdict)
	case r.Type == TypeCommitIntent && part.Commit != nil:
		s.Commits = append(s.Commits, *part.Commit)
	case r.Type == TypeCommitResult && len(s.Commits) > 0:
		s.Commits = s.Commits[:len(s.Commits)-1]
		if len(s.Commits) == 0 {
			s.Commits = nil // none, as a summary read back from its JSON says
		}
	case r.Call == "":
	case r.Type == TypePrepared:
		if err := clearUnknown(idx, r.Call); err != nil {
			return err
		}
		return idx.SetOpen(r.Call, &OpenCall{Call: r.Call, Seq: r.Seq, Node: part.Node, Role: part.Role})
	case r.Type == TypeThreadStarted, r.Type == TypeTurnStarted:
		o, err := idx.Open(r.Call)
		if err != nil || o == nil {
			return err
		}
		if part.Thread != "" {
			o.Thread = part.Thread
		}
		if part.Turn != "" {
			o.Turns = append(o.Turns, part.Turn)
		}
		return idx.SetOpen(r.Call, o)
	case IsTerminal(r.Type):
		o, err := idx.Open(r.Call)
		if err != nil {
			return err
		}
		if o == nil {
			prepared, _, err := idx.CallState(r.Call)
			if err != nil || !prepared {
				return err // a call never prepared counts for nothing
			}
			o = &OpenCall{Call: r.Call} // a later terminal row of an attempt: its record is gone
		}
		if err := idx.SetOpen(r.Call, nil); err != nil {
			return err
		}
		if r.Type != TypeOutcomeUnknown {
			return clearUnknown(idx, r.Call)
		}
		u, err := idx.Unknown(r.Call)
		if err != nil || (u != nil && u.Reconciled) {
			return err
		}
		if u != nil && o.Node == "" {
			o = &u.OpenCall // a second terminal row of the attempt: what the first knew
		}
		return idx.SetUnknown(r.Call, &UnknownCall{OpenCall: *o, Reason: part.Reason})
	}
	return nil
}

// clearUnknown forgets a call's unknown outcome, unless it has a verdict.
func clearUnknown(idx Index, call string) error {
	u, err := idx.Unknown(call)
	if err != nil || u == nil || u.Reconciled {
		return err
	}
	return idx.SetUnknown(call, nil)
}

func (s *Summary) uncount(status CallStatus) {
	if s.Calls[status]--; s.Calls[status] <= 0 {
		delete(s.Calls, status)
	}
}

// Summarize folds rows, seq 1 first, into a summary, keeping call states in memory: what a
// store does for a journal written before it kept summaries.
func Summarize(rows func(fn func(*Row) error) error) (*Summary, error) {
	s, _, err := SummarizeIndexed(rows)
	return s, err
}

// SummarizeIndexed is Summarize, with the Index the fold made.
func SummarizeIndexed(rows func(fn func(*Row) error) error) (*Summary, *MemIndex, error) {
	s, idx := NewSummary(), NewMemIndex()
	err := rows(func(r *Row) error { return s.Add(r.ForSummary(), idx) })
	if err != nil {
		return nil, nil, err
	}
	return s, idx, nil
}
