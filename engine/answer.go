package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crw-dev/crw/engine/offline"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/termtext"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Answered is what Answer did with an answer.
type Answered struct {
	Run      string `json:"run"`
	Decision string `json:"decision"`
	// Journaled: the answer is in the run's journal (a live process journaled it in time, or
	// the command did); else the run's live process takes it when it can.
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
	st, err := s.ActingStatus(ctx, run)
	if err != nil {
		return nil, err
	}
	if st.State == store.StateEnded {
		return nil, errs.New(errs.RunUnavailable, "run %s has ended (%s): it takes no answer", run, st.Status)
	}
	var asked, answered *journal.Row
	err = s.Store.Rows(ctx, run, 1, func(r *journal.Row) error {
		switch {
		case r.Type == journal.TypeDecisionRequested && r.DecisionID == id:
			// The newest: a decision asked again after a resume shows its question as it reads
			// now, and one asked anew after its answer (a resume ran a call a pause held
			// again, and its script asks with another schema) waits for an answer of its own.
			cp := *r
			asked, answered = &cp, nil
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
		if call, ok := strings.CutPrefix(id, decisions.EffectPrefix); ok {
			return nil, errs.New(errs.InvalidRequest, "run %s: %q is no decision but the verdict on call %s: give it with crw flow recover %s %s --applied [--output @FILE] or --not-applied", run, id, call, run, call)
		}
		waits := "it waits for no decision"
		if len(pending) > 0 {
			waits = "it waits for " + strings.Join(pending, ", ")
		}
		return nil, errs.New(errs.InvalidRequest, "run %s asked no decision %q: %s", run, id, waits)
	}
	if answered != nil {
		return nil, errs.New(errs.InvalidRequest, "decision %q of run %s was answered already (%s, by %s)", id, run, answered.At.Format("2006-01-02 15:04:05Z"), offline.OrSomeone(answered.By))
	}
	if len(value) > MaxAnswer {
		return nil, errs.Field("value", "", "the answer is %d bytes long; the limit is %d", len(value), MaxAnswer)
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
		return nil, errs.Field("value", "", "the answer to %q (%s) does not satisfy its schema: %v", id, clipText(asked.Question), err)
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
		return s.answerLive(ctx, out, a)
	}
	err = s.writeOffline(ctx, run, func(w *offline.Writer) error { return w.Answer(id, doc, by) })
	if errors.Is(err, store.ErrHeld) {
		// A process took the run in the meantime: it takes the answer.
		return s.answerLive(ctx, out, a)
	}
	if err != nil {
		return nil, err
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

// offline is the run's offline writer, on the run's lease, over the History its journal reads
// to now: store.ErrHeld when a process holds the run.
func (s *Service) offline(ctx context.Context, run string) (*offline.Writer, error) {
	lease, h, err := s.takeAndRead(ctx, run, false)
	if err != nil {
		return nil, err
	}
	return offline.New(run, lease, h), nil
}

// writeOffline writes through the run's offline writer, and releases its lease.
func (s *Service) writeOffline(ctx context.Context, run string, write func(*offline.Writer) error) error {
	w, err := s.offline(ctx, run)
	if err != nil {
		return err
	}
	werr := write(w)
	if err := w.Close(); werr == nil {
		werr = err
	}
	return werr
}

// MaxAnswer bounds an answer's JSON.
const MaxAnswer = decisions.MaxAnswer

// answerWait is how long an answer left for a live process waits to see it journaled.
const answerWait = 10 * time.Second

// answerLive leaves the answer for the run's live process and waits for it to be journaled:
// it says whether this answer was the one taken (two answers at once: the process takes the
// first, and the other is answered already).
func (s *Service) answerLive(ctx context.Context, out *Answered, a store.Answer) (*Answered, error) {
	got, err := s.awaitTaken(ctx, out.Run, a, func(r *journal.Row) bool {
		return r.Type == journal.TypeDecisionAnswered && r.DecisionID == out.Decision
	})
	switch {
	case err != nil:
		return nil, err
	case got == nil:
		return out, nil // the process takes it when it can
	case got.By == a.By && journal.SameJSON(got.Output, a.Value):
		out.Journaled = true
		return out, nil
	}
	return nil, errs.New(errs.InvalidRequest, "decision %q of run %s was answered already, by another answer (%s, by %s)",
		out.Decision, out.Run, got.At.Format("2006-01-02 15:04:05Z"), offline.OrSomeone(got.By))
}

// awaitTaken leaves a for the run's live process and waits up to answerWait for the row it
// journals for it (the first that match takes): nil when none came in time, or ctx ended; an
// error when the process refused this answer (a warning row that names it), in the process's
// words. Each look reads only the rows journaled since the one before, so a long journal is
// read once.
func (s *Service) awaitTaken(ctx context.Context, run string, a store.Answer, match func(*journal.Row) bool) (*journal.Row, error) {
	digest := journal.Digest(string(journal.Canonical(a.Value)))
	refused := func(r *journal.Row) bool {
		return r.Type == journal.TypeWarning && (r.Reason == journal.ReasonAnswerRefused || r.Reason == journal.ReasonVerdictRefused) &&
			r.DecisionID == a.ID && r.OutputDigest == digest && r.By == termtext.Clip(a.By, 200)
	}
	from := uint64(1)
	if sum, err := s.Store.Summary(ctx, run); err == nil {
		from = sum.LastSeq + 1 // the rows before were read already: none is this answer's
	}
	if err := s.Store.PutAnswer(ctx, run, a); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(answerWait)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(50 * time.Millisecond):
		}
		var got, refusal *journal.Row
		_ = s.Store.Rows(ctx, run, from, func(r *journal.Row) error {
			from = r.Seq + 1
			if got == nil && refusal == nil && (match(r) || refused(r)) {
				cp := *r
				if match(r) {
					got = &cp
				} else {
					refusal = &cp
				}
			}
			return nil
		})
		if refusal != nil {
			return nil, errs.New(errs.InvalidRequest, "run %s's process refused it: %s", run, refusal.Detail)
		}
		if got != nil {
			return got, nil
		}
	}
	return nil, nil
}

func clipText(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%.80s…", s)
	}
	return s
}
