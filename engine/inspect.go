package engine

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local/journalfile"
)

// ReadJournal reads every row of a run's journal. A journal a live process holds cannot be read
// (bbolt locks it): that is run_unavailable, and state.json is what can be read meanwhile.
func ReadJournal(state, run string) ([]journal.Row, error) {
	if !ValidRunID(run) {
		return nil, errs.New(errs.InvalidRequest, "%q is not a run id (like 20261130-052301-a1b2c3)", run)
	}
	path := filepath.Join(RunDir(state, run), JournalFile)
	if _, err := os.Stat(path); err != nil {
		return nil, errs.New(errs.RunUnavailable, "run %s: no journal at %s", run, path)
	}
	j, err := journalfile.OpenReadOnly(path)
	switch {
	case errors.Is(err, journalfile.ErrLocked):
		return nil, errs.New(errs.RunUnavailable, "run %s is held by a live process; its journal can be read once it ends (crw flow status %s reads its state now)", run, run)
	case errors.Is(err, journalfile.ErrCorrupt):
		return nil, errs.New(errs.IncompatibleSchema, "run %s: the journal %s is damaged: %v", run, path, err)
	case err != nil:
		return nil, errs.New(errs.RunUnavailable, "run %s: cannot open the journal: %v", run, err)
	}
	defer j.Close()
	rows, err := j.Rows()
	if err != nil {
		return nil, errs.New(errs.IncompatibleSchema, "run %s: cannot read the journal: %v", run, err)
	}
	return rows, nil
}

// CallSummary is one call as the journal tells it.
type CallSummary struct {
	Call       string          `json:"call"`
	Index      int             `json:"index"`
	Role       string          `json:"role"`
	Node       string          `json:"node"`
	Status     string          `json:"status"` // "" while it has no terminal row
	Reason     string          `json:"reason,omitempty"`
	Detail     string          `json:"detail,omitempty"`
	Site       string          `json:"site,omitempty"`
	ThreadID   string          `json:"thread_id,omitempty"`
	Model      string          `json:"model,omitempty"`
	Effort     string          `json:"effort,omitempty"`
	Turns      int             `json:"turns"`
	RepairUsed bool            `json:"repair_used"`
	Tokens     journal.Tokens  `json:"tokens"`
	Started    time.Time       `json:"started"`
	Ended      *time.Time      `json:"ended,omitempty"`
	DurationMS int64           `json:"duration_ms"`
	Prompt     string          `json:"prompt,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	StartSeq   uint64          `json:"start_seq"`
	EndSeq     uint64          `json:"end_seq,omitempty"`
	LastRow    string          `json:"last_row"`
	Attempts   int             `json:"attempts"`
}

// RunSummary is a run's timeline.
type RunSummary struct {
	Run         string            `json:"run"`
	Workflow    string            `json:"workflow"`
	Backend     string            `json:"backend"`
	Status      string            `json:"status"` // "" while it has not ended
	Started     time.Time         `json:"started"`
	Ended       *time.Time        `json:"ended,omitempty"`
	Result      json.RawMessage   `json:"result,omitempty"`
	Error       *journal.RunError `json:"error,omitempty"`
	Calls       []CallSummary     `json:"calls"`
	Counts      Counts            `json:"counts"`
	Tokens      journal.Tokens    `json:"tokens"`
	Escalations []journal.Row     `json:"escalations,omitempty"`
	Warnings    []journal.Row     `json:"warnings,omitempty"`
}

// Summarize reads a run's timeline out of its rows.
func Summarize(rows []journal.Row) RunSummary {
	s := RunSummary{Counts: Counts{}, Calls: []CallSummary{}}
	byCall := map[string]int{}
	for i := range rows {
		row := &rows[i]
		switch row.Type {
		case journal.TypeStarted:
			if s.Run == "" {
				s.Run, s.Workflow, s.Backend, s.Started = row.Run, row.Workflow, row.Backend, row.At
			}
		case journal.TypeEnded:
			at := row.At
			s.Ended, s.Status, s.Result, s.Error = &at, row.Status, row.Result, row.Error
		case journal.TypeEscalation:
			s.Escalations = append(s.Escalations, *row)
		case journal.TypeWarning:
			s.Warnings = append(s.Warnings, *row)
		case journal.TypePrepared:
			cs := CallSummary{
				Call: row.Call, Index: row.Index, Role: row.Role, Node: row.Node, Site: row.Site,
				Started: row.At, Prompt: row.Prompt, StartSeq: row.Seq, LastRow: row.Type, Attempts: 1,
			}
			if i, ok := byCall[row.Call]; ok {
				// A resume ran the call again (it was held by a pause): the new attempt is the call.
				old := s.Calls[i]
				if old.Status != "" {
					if s.Counts[old.Status]--; s.Counts[old.Status] == 0 {
						delete(s.Counts, old.Status)
					}
				}
				cs.Attempts = old.Attempts + 1
				s.Calls[i] = cs
				continue
			}
			byCall[row.Call] = len(s.Calls)
			s.Calls = append(s.Calls, cs)
		default:
			i, ok := byCall[row.Call]
			if !ok {
				continue
			}
			c := &s.Calls[i]
			c.LastRow = row.Type
			switch row.Type {
			case journal.TypeThreadStarted:
				c.ThreadID, c.Model, c.Effort = row.ThreadID, row.Model, row.Effort
			case journal.TypeTurnStarted:
				c.Turns++
			}
			if journal.IsTerminal(row.Type) {
				if c.Status != "" {
					// A later terminal row (superseded) replaces the call's outcome.
					if s.Counts[c.Status]--; s.Counts[c.Status] == 0 {
						delete(s.Counts, c.Status)
					}
				}
				at := row.At
				c.Status, c.Reason, c.Detail, c.Ended, c.EndSeq = StatusOf(row.Type), row.Reason, row.Detail, &at, row.Seq
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
	return s
}

// RunStatus is where a run stands.
type RunStatus struct {
	Run      string            `json:"run"`
	State    string            `json:"state"` // running, paused, ended, crashed
	Status   string            `json:"status"`
	Result   json.RawMessage   `json:"result"`
	Error    *journal.RunError `json:"error"`
	Calls    Counts            `json:"calls"`
	InFlight int               `json:"in_flight"`
	Tokens   journal.Tokens    `json:"tokens"`
	Workflow string            `json:"workflow"`
	Backend  string            `json:"backend"`
	Started  time.Time         `json:"started"`
}

// Status tells where a run stands: from what its process publishes while one holds it, else
// from its journal, which is the record (a process killed after its last commit leaves a
// state.json that lags behind it).
func Status(state, run string) (*RunStatus, error) {
	if !ValidRunID(run) {
		return nil, errs.New(errs.InvalidRequest, "%q is not a run id (like 20261130-052301-a1b2c3)", run)
	}
	spec, err := ReadSpec(state, run)
	if err != nil {
		return nil, err
	}
	out := &RunStatus{Run: run, Workflow: spec.Workflow, Backend: spec.Backend, Started: spec.CreatedAt, Result: json.RawMessage("null"), Calls: Counts{}}
	if Live(state, run) {
		out.State = "running"
		if st, err := ReadState(state, run); err == nil {
			out.State, out.Status, out.Error, out.InFlight, out.Tokens = st.State, st.Status, st.Error, st.InFlight, st.Tokens
			if st.Result != nil {
				out.Result = st.Result
			}
			if st.Calls != nil {
				out.Calls = st.Calls
			}
		}
		return out, nil
	}
	rows, err := ReadJournal(state, run)
	if err != nil {
		return nil, err
	}
	s := Summarize(rows)
	out.Calls, out.Tokens, out.Status, out.Error = s.Counts, s.Tokens, s.Status, s.Error
	if s.Result != nil {
		out.Result = s.Result
	}
	switch s.Status {
	case "":
		out.State = "crashed" // no process holds it and it has not ended
		if st, err := ReadState(state, run); err == nil && st.State == "stopped" {
			out.Error = st.Error // why its last process stopped (a divergence, a failed journal)
		}
	case RunPaused:
		out.State = "paused"
	default:
		out.State = "ended"
	}
	return out, nil
}
