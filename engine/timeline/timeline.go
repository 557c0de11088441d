// Package timeline is a run's calls as its journal tells them, folded from its rows as they
// stream: each call's newest generation, the run's counts and tokens, its escalations,
// warnings and workspace steps.
package timeline

import (
	"encoding/json"
	"time"

	"github.com/crw-dev/crw/engine/result"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Call is one call as the journal tells it: its newest generation (its rows from its
// newest prepared row on; Attempts counts the generations). A call a resume took up again was
// prepared again, and its earlier generations' rows stay in the journal (crw flow trace).
type Call struct {
	Call       string             `json:"call"`
	Index      int                `json:"index"`
	Role       string             `json:"role"`
	Node       string             `json:"node"`
	Status     journal.CallStatus `json:"status"` // "" while it has no terminal row
	Reason     string             `json:"reason,omitempty"`
	Detail     string             `json:"detail,omitempty"`
	Site       string             `json:"site,omitempty"`
	ThreadID   string             `json:"thread_id,omitempty"`
	Model      string             `json:"model,omitempty"`
	Effort     string             `json:"effort,omitempty"`
	Turns      int                `json:"turns"`
	RepairUsed bool               `json:"repair_used"`
	Tokens     journal.Tokens     `json:"tokens"`
	Started    time.Time          `json:"started"`
	Ended      *time.Time         `json:"ended,omitempty"`
	DurationMS int64              `json:"duration_ms"`
	Prompt     string             `json:"prompt,omitempty"`
	Output     json.RawMessage    `json:"output,omitempty"`
	StartSeq   uint64             `json:"start_seq"`
	EndSeq     uint64             `json:"end_seq,omitempty"`
	LastRow    string             `json:"last_row"`
	Attempts   int                `json:"attempts"`
	// Handle is the call's own handle, once it has a thread (what a continuation of it names);
	// Continues the handle it continues; Repair what its repair turn named as wrong.
	Handle    string `json:"handle,omitempty"`
	Continues string `json:"continues,omitempty"`
	Repair    string `json:"repair,omitempty"`
}

// Timeline is a run's calls, in the order the script made them, as its journal tells them.
type Timeline struct {
	Run         string            `json:"run"`
	Workflow    string            `json:"workflow"`
	Backend     string            `json:"backend"`
	Status      store.RunStatus   `json:"status"` // "" while it has not ended
	Started     time.Time         `json:"started"`
	Ended       *time.Time        `json:"ended,omitempty"`
	Result      json.RawMessage   `json:"result,omitempty"`
	Error       *journal.RunError `json:"error,omitempty"`
	Calls       []Call            `json:"calls"`
	Counts      store.Counts      `json:"counts"`
	Tokens      journal.Tokens    `json:"tokens"`
	Escalations []journal.Row     `json:"escalations,omitempty"`
	Warnings    []journal.Row     `json:"warnings,omitempty"`
	// Steps are the run's workspace rows in order: commits (intent and result), tier steps and
	// decisions asked and answered (docs/workspaces.md).
	Steps []journal.Row `json:"steps,omitempty"`
}

// Summarize reads a timeline out of a journal's rows.
func Summarize(rows []journal.Row) Timeline {
	f := NewFold()
	for i := range rows {
		f.Add(&rows[i])
	}
	return f.t
}

// Fold builds a Timeline a row at a time, keeping nothing of a row but what it shows.
type Fold struct {
	t      Timeline
	byCall map[string]int
}

// NewFold returns an empty fold: Add each row in order, then Timeline.
func NewFold() *Fold {
	return &Fold{t: Timeline{Counts: store.Counts{}, Calls: []Call{}}, byCall: map[string]int{}}
}

// Timeline is the run's timeline from the rows folded in so far.
func (f *Fold) Timeline() *Timeline { return &f.t }

// Add folds the next row in.
func (f *Fold) Add(row *journal.Row) {
	s, byCall := &f.t, f.byCall
	uncount := func(status journal.CallStatus) {
		if s.Counts[status]--; s.Counts[status] == 0 {
			delete(s.Counts, status)
		}
	}
	switch row.Type {
	case journal.TypeStarted:
		if s.Run == "" {
			s.Run, s.Workflow, s.Backend, s.Started = row.Run, row.Workflow, row.Backend, row.At
		}
	case journal.TypeEnded:
		at := row.At
		s.Ended, s.Status, s.Result, s.Error = &at, store.RunStatus(row.Status), row.Result, row.Error
	case journal.TypeEscalation:
		s.Escalations = append(s.Escalations, *row)
	case journal.TypeCommitResult, journal.TypeTierStep, journal.TypeDecisionRequested, journal.TypeDecisionAnswered, journal.TypeEffectReconciled:
		s.Steps = append(s.Steps, *row)
	case journal.TypeWarning:
		s.Warnings = append(s.Warnings, *row)
	case journal.TypePrepared:
		tc := Call{
			Call: row.Call, Index: row.Index, Role: row.Role, Node: row.Node, Site: row.Site,
			Started: row.At, Prompt: row.Prompt, StartSeq: row.Seq, LastRow: row.Type, Attempts: 1, Continues: row.Handle,
		}
		if i, ok := byCall[row.Call]; ok {
			// A resume ran the call again (it was held by a pause): the new attempt is the call.
			old := s.Calls[i]
			if old.Status != "" {
				uncount(old.Status)
			}
			tc.Attempts = old.Attempts + 1
			s.Calls[i] = tc
			return
		}
		byCall[row.Call] = len(s.Calls)
		s.Calls = append(s.Calls, tc)
	default:
		i, ok := byCall[row.Call]
		if !ok {
			return
		}
		c := &s.Calls[i]
		c.LastRow = row.Type
		switch row.Type {
		case journal.TypeThreadStarted:
			c.ThreadID, c.Model, c.Effort = row.ThreadID, row.Model, row.Effort
			c.Handle = result.Handle(s.Run, row.Call)
		case journal.TypeTurnStarted:
			c.Turns++
			if row.K > 1 {
				c.Repair = row.Repair
			}
		}
		if journal.IsTerminal(row.Type) {
			if c.Status != "" {
				// A generation has one terminal row; a journal of an earlier crw may hold a
				// second one (a held call later superseded), which is then the outcome.
				uncount(c.Status)
			}
			at := row.At
			c.Status, c.Reason, c.Detail, c.Ended, c.EndSeq = journal.StatusOf(row.Type), row.Reason, row.Detail, &at, row.Seq
			c.RepairUsed = row.RepairUsed
			c.DurationMS = at.Sub(c.Started).Milliseconds()
			if row.Tokens != nil {
				c.Tokens = c.Tokens.Add(*row.Tokens)
				s.Tokens = s.Tokens.Add(*row.Tokens)
			}
			if row.Type == journal.TypeCompleted {
				c.Output = row.Output
			}
			s.Counts[c.Status]++
		}
	}
}
