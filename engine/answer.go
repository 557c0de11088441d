package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Answered is what Answer did with an answer.
type Answered struct {
	Run      string `json:"run"`
	Decision string `json:"decision"`
	// Journaled: the answer is in the run's journal; else the run's live process takes it.
	Journaled bool `json:"journaled"`
	// PID is the process a resume started (0: none was).
	PID int `json:"pid,omitempty"`
}

// Answer answers a decision the run asked (crw.decide). The value must satisfy the decision's
// schema. A run no process holds gets the answer in its journal, and then, with resume, a
// process that goes on with it; a live run's process is left the answer and journals it
// itself. A run whose recorded environment cannot be used (its TMPDIR) is refused before
// anything is written when it is to be resumed.
func (s *Service) Answer(ctx context.Context, run, id string, value json.RawMessage, by string, resume bool) (*Answered, error) {
	st, err := s.Status(ctx, run)
	if err != nil {
		return nil, err
	}
	if st.State == store.StateEnded {
		return nil, errs.New(errs.RunUnavailable, "run %s has ended (%s): it takes no answer", run, st.Status)
	}
	var asked, answered *journal.Row
	err = s.Store.Rows(ctx, run, 1, func(r *journal.Row) error {
		switch {
		case r.Type == journal.TypeDecisionRequested && r.DecisionID == id && asked == nil:
			cp := *r
			asked = &cp
		case r.Type == journal.TypeDecisionAnswered && r.DecisionID == id:
			cp := *r
			answered = &cp
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if asked == nil {
		sum, _ := s.Store.Summary(ctx, run)
		var pending []string
		if sum != nil {
			for _, d := range sum.Decisions {
				pending = append(pending, d.ID)
			}
		}
		waits := "it waits for no decision"
		if len(pending) > 0 {
			waits = "it waits for " + strings.Join(pending, ", ")
		}
		return nil, errs.New(errs.InvalidRequest, "run %s asked no decision %q: %s", run, id, waits)
	}
	if answered != nil {
		return nil, errs.New(errs.InvalidRequest, "decision %q of run %s was answered already (%s, by %s)", id, run, answered.At.Format("2006-01-02 15:04:05Z"), orSomeone(answered.By))
	}
	v, err := schema.Compile(asked.Schema)
	if err != nil {
		return nil, errs.New(errs.IncompatibleSchema, "decision %q of run %s: its recorded schema: %v", id, run, err)
	}
	doc, _, err := schema.ParseAnswer(string(value))
	if err == nil {
		err = v.Validate(doc)
	}
	if err != nil {
		return nil, errs.New(errs.InvalidRequest, "--value: the answer to %q (%s) does not satisfy its schema: %v", id, clipText(asked.Question), err)
	}
	if resume {
		if _, err := s.Env(ctx, run); err != nil {
			return nil, err
		}
	}
	a := store.Answer{ID: id, Value: doc, By: by}
	out := &Answered{Run: run, Decision: id}
	if _, held, err := s.Store.Published(ctx, run); err != nil {
		return nil, err
	} else if held {
		return out, s.Store.PutAnswer(ctx, run, a)
	}
	lease, err := s.Store.Acquire(ctx, run)
	if errors.Is(err, store.ErrHeld) {
		// A process took the run in the meantime: it takes the answer.
		return out, s.Store.PutAnswer(ctx, run, a)
	}
	if err != nil {
		return nil, err
	}
	_, werr := lease.Journal().Write(&journal.Row{Type: journal.TypeDecisionAnswered, DecisionID: id, Output: doc, By: by})
	if err := lease.Release(); werr == nil {
		werr = err
	}
	if werr != nil {
		return nil, werr
	}
	out.Journaled = true
	if resume {
		pid, err := s.Start(ctx, run)
		if err != nil {
			return out, err
		}
		out.PID = pid
	}
	return out, nil
}

func orSomeone(by string) string {
	if by == "" {
		return "someone"
	}
	return by
}

func clipText(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%.80s…", s)
	}
	return s
}
