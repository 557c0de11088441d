package engine

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
)

// recorded is one call as the journal tells it: the rows of its latest attempt. A resumed
// run matches the script's calls against these in issue order.
type recorded struct {
	attempt   int // how many prepared rows the call has: this is its attempt-th
	prepared  *journal.Row
	steps     []*journal.Row // step_published rows, in order
	thread    *journal.Row
	turns     []*journal.Row // turn_started rows, in order
	interrupt *journal.Row
	terminal  *journal.Row
	tokens    journal.Tokens // every attempt's, for the run's spending
	// The CallResult a settled call replays, built ahead of the replay by buildResults or
	// on demand, whichever comes first.
	resultOnce sync.Once
	result     json.RawMessage
}

// replayResult is the CallResult a settled call replays.
func (c *recorded) replayResult(run string) json.RawMessage {
	c.resultOnce.Do(func() {
		c.result, _ = json.Marshal(BuildResult(run, c.prepared, c.thread, c.terminal))
	})
	return c.result
}

// pauseReasons are the held reasons a pause gives; a resume runs those calls again.
var pauseReasons = map[string]bool{"host_infra_quota": true, "host_infra_rate": true, "engine_paused": true}

// settled: the call has an outcome the script is given again on replay.
func (c *recorded) settled() bool {
	return c.terminal != nil && !(c.terminal.Type == journal.TypeHeld && pauseReasons[c.terminal.Reason])
}

// reopened: the call was held by a pause (or interrupted for one); a resume runs it again.
func (c *recorded) reopened() bool {
	if c.terminal != nil {
		return !c.settled()
	}
	return c.interrupt != nil && pauseReasons[c.interrupt.Reason]
}

// lastRow is the call's latest row of its latest attempt.
func (c *recorded) lastRow() *journal.Row {
	switch {
	case c.terminal != nil:
		return c.terminal
	case c.interrupt != nil:
		return c.interrupt
	}
	last := c.prepared
	for _, rows := range [][]*journal.Row{c.steps, c.turns} {
		if n := len(rows); n > 0 && rows[n-1].Seq > last.Seq {
			last = rows[n-1]
		}
	}
	if c.thread != nil && c.thread.Seq > last.Seq {
		last = c.thread
	}
	return last
}

// history is what a resumed run needs of its journal.
type history struct {
	run     string
	started *journal.Row // the first started row: the run's clock starts there
	backend string
	ended   *journal.Row
	byID    map[string]*recorded
	byIndex map[int]*recorded // the calls the script issued, by issue order (latest id per index)
	order   []*recorded       // settled calls, in the order the script received them
	// every call with a terminal row, in the order of those rows
	finished []*recorded
	maxCall  int               // the highest numeric call id in the journal
	holds    map[string]string // node → the call whose unknown outcome holds it
	spent    journal.Tokens
	lastSeq  uint64
	starts   int // started rows: processes that ran the run
	ids      []string
}

// readHistory reads a journal's rows into a history.
func readHistory(rows []journal.Row) (*history, error) {
	h := &history{byID: map[string]*recorded{}, byIndex: map[int]*recorded{}, holds: map[string]string{}}
	for i := range rows {
		row := &rows[i]
		if row.Seq != uint64(i+1) {
			return nil, errs.New(errs.IncompatibleSchema, "journal: row %d has seq %d", i+1, row.Seq)
		}
		h.lastSeq = row.Seq
		switch row.Type {
		case journal.TypeStarted:
			h.starts++
			if h.started == nil {
				h.started, h.run, h.backend = row, row.Run, row.Backend
			}
			continue
		case journal.TypeEnded:
			// A paused run ended its process, not its work: a resume goes on with it.
			h.ended = row
			if row.Status == RunPaused {
				h.ended = nil
			}
			continue
		case journal.TypeEscalation, journal.TypeWarning:
			continue
		}
		if row.Call == "" {
			continue
		}
		c := h.byID[row.Call]
		if row.Type == journal.TypePrepared {
			// A new attempt of a call (a resume ran it again) starts over; its tokens stay spent.
			fresh := &recorded{prepared: row, attempt: 1}
			if c != nil {
				fresh.tokens, fresh.attempt = c.tokens, c.attempt+1
			} else {
				h.ids = append(h.ids, row.Call)
			}
			h.byID[row.Call] = fresh
			h.byIndex[row.Index] = fresh
			var n int
			if _, err := fmt.Sscanf(row.Call, "c%d", &n); err == nil && n > h.maxCall {
				h.maxCall = n
			}
			continue
		}
		if c == nil {
			return nil, errs.New(errs.IncompatibleSchema, "journal: row %d (%s) names call %s, which has no prepared row", row.Seq, row.Type, row.Call)
		}
		switch {
		case row.Type == journal.TypeThreadStarted:
			c.thread = row
		case row.Type == journal.TypeTurnStarted:
			c.turns = append(c.turns, row)
		case row.Type == journal.TypeStepPublished:
			c.steps = append(c.steps, row)
		case row.Type == journal.TypeInterruptRequested:
			c.interrupt = row
		case journal.IsTerminal(row.Type):
			c.terminal = row
			if row.Tokens != nil {
				c.tokens = c.tokens.Add(*row.Tokens)
				h.spent = h.spent.Add(*row.Tokens)
			}
			if row.Type == journal.TypeOutcomeUnknown {
				if _, held := h.holds[c.prepared.Node]; !held {
					h.holds[c.prepared.Node] = row.Call
				}
			}
			if c.settled() {
				h.order = append(h.order, c)
			}
			h.finished = append(h.finished, c)
		}
	}
	if h.started == nil {
		return nil, errs.New(errs.IncompatibleSchema, "journal: no started row")
	}
	return h, nil
}

// buildResults makes the CallResults of calls in the background, in the order given (the order
// the replay hands them over), so the script's loop mostly finds them ready.
func (h *history) buildResults(calls []*recorded) {
	go func() {
		for _, c := range calls {
			c.replayResult(h.run)
		}
	}()
}

// outcomes is every call's latest outcome in the order the journal recorded it: what a
// shadow replays, pause-held calls included, since the recorded script saw them.
func (h *history) outcomes() []*recorded {
	var out []*recorded
	for _, c := range h.finished {
		if h.byID[c.prepared.Call] == c {
			out = append(out, c)
		}
	}
	return out
}

// clockStart is when the run's clock starts: its first process's started row.
func (h *history) clockStart() time.Time { return h.started.At }
