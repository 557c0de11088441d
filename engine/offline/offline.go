// Package offline writes a run's rows while no process runs it: an answer to a decision, an
// operator's verdict on a lost effect, a change the next resume goes on with, and the cancel of
// a run no process holds. Like the runner, a Writer writes only on the run's lease, over the
// History its journal reads to once the lease is held (so nothing journaled since a caller
// looked is missed), and takes a call's rows through its state machine; the rows are the
// runner's (runner.StartedRow, decisions.ReconciledRow). engine.Service acquires the lease and
// hands it to a Writer, or leaves the row to the live process that holds the run.
package offline

import (
	"encoding/json"

	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/runner"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/engine/runner/ends"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Writer is the one writer of a run's rows while no process holds it.
type Writer struct {
	run   string
	lease store.Lease
	h     *replay.History // nil: the journal holds no row (no process ever ran the run)
}

// New is a Writer on a run's lease, over the History its journal held when the lease was taken.
// The Writer owns the lease: Close releases it.
func New(run string, lease store.Lease, h *replay.History) *Writer {
	return &Writer{run: run, lease: lease, h: h}
}

// Close releases the run's lease.
func (w *Writer) Close() error { return w.lease.Release() }

// write journals rows, durably.
func (w *Writer) write(rows ...*journal.Row) error {
	_, err := w.lease.Journal().Write(rows...)
	return err
}

// Answer journals the answer to decision id, unless it was answered already or does not fit
// the schema the decision was last asked with (a resume may have asked it anew since the
// caller read it).
func (w *Writer) Answer(id string, doc json.RawMessage, by string) error {
	if w.h != nil {
		if d := w.h.Decisions[id]; d != nil && d.Answer != nil {
			return errs.New(errs.InvalidRequest, "decision %q of run %s was answered already (%s, by %s)", id, w.run,
				d.Answer.At.Format("2006-01-02 15:04:05Z"), OrSomeone(d.Answer.By))
		} else if d != nil && d.Request.Node == "" {
			v, err := schema.Compile(d.Request.Schema)
			if err != nil {
				return errs.New(errs.IncompatibleSchema, "decision %q of run %s: its recorded schema: %v", id, w.run, err)
			}
			value, _, err := schema.ParseAnswer(string(doc))
			if err == nil {
				err = v.Validate(value)
			}
			if err != nil {
				return errs.Field("value", "", "the answer to %q does not satisfy the schema it was last asked with: %v", id, err)
			}
		}
	}
	return w.write(journal.DecisionAnswered{ID: id, Output: doc, By: by}.Row())
}

// Reconcile journals an operator's verdict on call's unknown outcome: one verdict a call.
func (w *Writer) Reconcile(call string, v decisions.Verdict, by string) error {
	if w.h != nil {
		if r := w.h.Reconciled[call]; r != nil {
			return errs.New(errs.InvalidRequest, "call %s of run %s was reconciled already (%s, by %s)", call, w.run, r.Verdict, OrSomeone(r.By))
		}
	}
	return w.write(decisions.ReconciledRow(call, v, by))
}

// Change journals a change the run's next process goes on with (a resume_changed row).
func (w *Writer) Change(row *journal.Row) error {
	if row.Type != journal.TypeResumeChanged {
		return errs.New(errs.InvalidRequest, "run %s: a %s row is no change to a resume", w.run, row.Type)
	}
	return w.write(row)
}

// Cancel ends the run: its open calls held cancelled (a turn a dead process sent is not waited
// for), then the rows cleanUp gives (what removing the run's worktrees left to say), then the
// run's ended row. A run no process ever ran opens with a started row all the same.
func (w *Writer) Cancel(spec *store.Spec, cleanUp func(dir string) *journal.Row) error {
	var out []*journal.Row
	if w.h == nil {
		out = append(out, runner.StartedRow(spec, spec.Backend, spec.ScriptDigest, w.lease.Token()))
	} else {
		if w.h.Ended != nil {
			return errs.New(errs.RunUnavailable, "run %s has ended (%s): there is nothing to cancel", w.run, w.h.Ended.Status)
		}
		for _, id := range w.h.IDs {
			c := w.h.Call(id)
			if c.EndType != "" {
				continue
			}
			row := journal.Held("cancelled", "the run was cancelled while no process held it")
			row.Call = id
			for _, t := range c.Turns {
				row.TurnIDs = append(row.TurnIDs, t.TurnID)
			}
			if err := c.Machine().Apply(row); err != nil {
				return errs.New(errs.IncompatibleSchema, "run %s: %v", w.run, err)
			}
			out = append(out, row)
		}
	}
	if cleanUp != nil {
		if row := cleanUp(w.lease.Dir()); row != nil {
			out = append(out, row)
		}
	}
	out = append(out, journal.Ended{Status: string(store.RunCancelled), Error: ends.CancelledError(w.run)}.Row())
	if err := w.write(out...); err != nil {
		return errs.New(errs.CapabilityUnavailable, "run %s: its journal could not be written", w.run).Wrap(err).
			Because("journal", "journal_write_failed", "not_started", errs.Certain).
			Next("make room or fix the state folder, then crw flow cancel " + w.run)
	}
	return nil
}

// OrSomeone is who gave an answer or verdict, for a message.
func OrSomeone(by string) string {
	if by == "" {
		return "someone"
	}
	return by
}
