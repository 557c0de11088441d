// Package runwarn carries what a backend reports outside any call (warnings, wakes, escalations)
// into the run's journal once its process writes.
package runwarn

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// ReasonEventRefused is the warning's reason of an event a backend reported that is none of
// backend.EventTypes: it is not journaled.
const ReasonEventRefused = "backend_event_refused"

// maxEarlyWarnings bounds the warnings kept before the run's process starts writing.
const maxEarlyWarnings = 64

// Sink carries a backend's warnings that belong to no call into the run's journal, through
// the journal the runner writes: after the started row, and never once the run has stopped.
// Its Warn is what backend.Config.Warn is given.
type Sink struct {
	mu    sync.Mutex
	j     store.Journal
	early []*journal.Row
}

// Warn journals a warning, or keeps it until the run's process writes.
func (w *Sink) Warn(reason, detail string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	row := journal.Warning{Reason: reason, Detail: detail}.Row()
	if w.j == nil {
		if len(w.early) < maxEarlyWarnings {
			w.early = append(w.early, row)
		}
		return
	}
	w.j.Append(row)
}

// Report journals a backend's event of the run, durably before it returns (a wake's row tells
// of a turn started on the owner's thread), or keeps it until the run's process writes.
func (w *Sink) Report(e backend.Event) {
	row := e.Row()
	if row == nil || !slices.Contains(backend.EventTypes, row.Type) {
		// A backend reports the events of the pull contract, no row of its own making.
		what := "no row"
		if row != nil {
			what = fmt.Sprintf("a row of type %q", row.Type)
		}
		row = journal.Warning{Reason: ReasonEventRefused, Detail: fmt.Sprintf("the backend reported %s as an event of the run; only %s are", what, strings.Join(backend.EventTypes, ", "))}.Row()
	}
	w.mu.Lock()
	if w.j == nil {
		if len(w.early) < maxEarlyWarnings {
			w.early = append(w.early, row)
		}
		w.mu.Unlock()
		return
	}
	j := w.j
	seq := j.Append(row)
	w.mu.Unlock()
	_ = j.Sync(seq) // a journal that cannot be written stops the run on its own
}

// Bind sends the warnings to j from now on, the ones kept so far first.
func (w *Sink) Bind(j store.Journal) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.j = j
	if len(w.early) > 0 {
		j.Append(w.early...)
		w.early = nil
	}
}
