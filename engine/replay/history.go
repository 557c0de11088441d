// Package replay is the one path recorded results take to a script: a run's History read from
// its journal, the Replayer that matches the script's calls with it by their inputs, and the
// delivery of recorded results in the order the journal recorded them. A resumed run and a
// shadow replay both use it; they differ only in how they match (Strict or Align) and in what
// their host does with a call the record does not settle.
package replay

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/crw-dev/crw/engine/result"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
)

// Call is one call as the journal tells it: the rows of its latest attempt, its newest
// generation (the rows from its newest prepared row on), which has at most one terminal row.
type Call struct {
	Attempt   int // how many prepared rows the call has: this is its Attempt-th
	Prepared  *journal.Row
	Steps     []*journal.Row // step_published rows, in order
	Thread    *journal.Row
	Turns     []*journal.Row // turn_started rows, in order
	Interrupt *journal.Row
	Terminal  *journal.Row
	Tokens    journal.Tokens // every attempt's, for the run's spending

	// The CallResult a settled call replays, built ahead of the replay or on demand,
	// whichever comes first.
	resultOnce sync.Once
	result     json.RawMessage
}

// Result is the CallResult a call with a terminal row gives the script again; omitSeqs is the
// run's started row's OmitCallSeqs, the same for every call.
func (c *Call) Result(run string, omitSeqs bool) json.RawMessage {
	c.resultOnce.Do(func() {
		cr := result.Build(run, c.Prepared, c.Thread, c.Terminal)
		if omitSeqs {
			cr = cr.WithoutSeqs()
		}
		c.result, _ = json.Marshal(cr)
	})
	return c.result
}

// PauseReasons are the held reasons a pause gives; a resume runs those calls again.
var PauseReasons = map[string]bool{"host_infra_quota": true, "host_infra_rate": true, "engine_paused": true}

// Settled reports whether the call has an outcome a replay gives the script again.
func (c *Call) Settled() bool {
	return c.Terminal != nil && !(c.Terminal.Type == journal.TypeHeld && PauseReasons[c.Terminal.Reason])
}

// Reopened reports whether a pause held (or interrupted) the call: a resume runs it again.
func (c *Call) Reopened() bool {
	if c.Terminal != nil {
		return !c.Settled()
	}
	return c.Interrupt != nil && PauseReasons[c.Interrupt.Reason]
}

// LastRow is the call's latest row of its latest attempt.
func (c *Call) LastRow() *journal.Row {
	switch {
	case c.Terminal != nil:
		return c.Terminal
	case c.Interrupt != nil:
		return c.Interrupt
	}
	last := c.Prepared
	for _, rows := range [][]*journal.Row{c.Steps, c.Turns} {
		if n := len(rows); n > 0 && rows[n-1].Seq > last.Seq {
			last = rows[n-1]
		}
	}
	if c.Thread != nil && c.Thread.Seq > last.Seq {
		last = c.Thread
	}
	return last
}

// History is what a replay needs of a journal.
type History struct {
	Run     string
	Started *journal.Row // the first started row: the run's clock starts there
	Backend string
	Ended   *journal.Row // nil while the run can go on (a paused run can)
	ByID    map[string]*Call
	ByIndex map[int]*Call // the calls the script issued, by issue order (latest attempt per index)
	// Order is every settled call in the order the script received it: what a resume
	// delivers again.
	Order []*Call
	// Finished is every call with a terminal row, in the order of those rows.
	Finished []*Call
	MaxCall  int               // the highest numeric call id
	MaxIndex int               // the highest issue index
	Holds    map[string]string // node → the call whose unknown outcome holds it
	Spent    journal.Tokens
	LastSeq  uint64
	Starts   int      // started rows: the processes that ran the run
	IDs      []string // call ids in the order their first attempt was prepared
}

// Read reads a journal's rows into a History. Rows out of place, a call's row with no prepared
// row before it, an output too deep for its CallResult (result.MaxOutputDepth), or a journal
// with no started row are incompatible_schema.
func Read(rows []journal.Row) (*History, error) {
	h := &History{ByID: map[string]*Call{}, ByIndex: map[int]*Call{}, Holds: map[string]string{}}
	for i := range rows {
		row := &rows[i]
		if row.Seq != uint64(i+1) {
			return nil, errs.New(errs.IncompatibleSchema, "journal: row %d has seq %d", i+1, row.Seq)
		}
		h.LastSeq = row.Seq
		switch row.Type {
		case journal.TypeStarted:
			h.Starts++
			if h.Started == nil {
				h.Started, h.Run, h.Backend = row, row.Run, row.Backend
			}
			continue
		case journal.TypeEnded:
			// A paused run ended its process, not its work: a resume goes on with it.
			h.Ended = row
			if row.Status == "paused" {
				h.Ended = nil
			}
			continue
		case journal.TypeEscalation, journal.TypeWarning:
			continue
		}
		if row.Call == "" {
			continue
		}
		c := h.ByID[row.Call]
		if row.Type == journal.TypePrepared {
			// Issue indexes count the calls from 1, so none exceeds the rows; a larger one (a
			// trace written to hurt) would make the replayer walk up to it.
			if row.Index < 1 || row.Index > len(rows) {
				return nil, errs.New(errs.IncompatibleSchema, "journal: row %d (prepared) of call %s has the issue index %d, outside 1..%d",
					row.Seq, row.Call, row.Index, len(rows))
			}
			// A new attempt of a call (a resume ran it again) starts over; its tokens stay spent.
			fresh := &Call{Prepared: row, Attempt: 1}
			if c != nil {
				fresh.Tokens, fresh.Attempt = c.Tokens, c.Attempt+1
			} else {
				h.IDs = append(h.IDs, row.Call)
			}
			h.ByID[row.Call] = fresh
			h.ByIndex[row.Index] = fresh
			h.MaxIndex = max(h.MaxIndex, row.Index)
			var n int
			if _, err := fmt.Sscanf(row.Call, "c%d", &n); err == nil && n > h.MaxCall {
				h.MaxCall = n
			}
			continue
		}
		if c == nil {
			return nil, errs.New(errs.IncompatibleSchema, "journal: row %d (%s) names call %s, which has no prepared row", row.Seq, row.Type, row.Call)
		}
		switch {
		case row.Type == journal.TypeThreadStarted:
			c.Thread = row
		case row.Type == journal.TypeTurnStarted:
			c.Turns = append(c.Turns, row)
		case row.Type == journal.TypeStepPublished:
			c.Steps = append(c.Steps, row)
		case row.Type == journal.TypeInterruptRequested:
			c.Interrupt = row
		case journal.IsTerminal(row.Type):
			if d := result.OutputDepth(row.Output, result.MaxOutputDepth); d > result.MaxOutputDepth {
				return nil, errs.New(errs.IncompatibleSchema, "journal: row %d (%s) of call %s has an output nested more than %d levels deep, which no CallResult can hold",
					row.Seq, row.Type, row.Call, result.MaxOutputDepth)
			}
			if c.Terminal != nil {
				// A second terminal row in one generation, which a journal of an earlier crw
				// may hold (a held call later superseded): the newer one is the call's outcome.
				h.Order = slices.DeleteFunc(h.Order, func(o *Call) bool { return o == c })
				h.Finished = slices.DeleteFunc(h.Finished, func(o *Call) bool { return o == c })
			}
			c.Terminal = row
			if row.Tokens != nil {
				c.Tokens = c.Tokens.Add(*row.Tokens)
				h.Spent = h.Spent.Add(*row.Tokens)
			}
			if row.Type == journal.TypeOutcomeUnknown {
				if _, held := h.Holds[c.Prepared.Node]; !held {
					h.Holds[c.Prepared.Node] = row.Call
				}
			}
			if c.Settled() {
				h.Order = append(h.Order, c)
			}
			h.Finished = append(h.Finished, c)
		}
	}
	if h.Started == nil {
		return nil, errs.New(errs.IncompatibleSchema, "journal: no started row")
	}
	return h, nil
}

// Outcomes is every call's latest outcome in the order the journal recorded it: what a shadow
// replays, pause-held calls included, since the recorded script saw them.
func (h *History) Outcomes() []*Call {
	var out []*Call
	for _, c := range h.Finished {
		if h.ByID[c.Prepared.Call] == c {
			out = append(out, c)
		}
	}
	return out
}

// BuildResults makes the CallResults of calls in the background, in the order given (the order
// a replay hands them over), so the script's loop mostly finds them ready.
func (h *History) BuildResults(calls []*Call) {
	go func() {
		for _, c := range calls {
			c.Result(h.Run, h.OmitCallSeqs())
		}
	}()
}

// OmitCallSeqs reports whether the run's CallResults go without meta.startSeq and meta.endSeq,
// as its started row says.
func (h *History) OmitCallSeqs() bool { return h.Started != nil && h.Started.OmitCallSeqs }

// ClockStart is when the run's clock starts: its first process's started row.
func (h *History) ClockStart() time.Time { return h.Started.At }
