package engine

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crw-dev/crw/journal"
)

// delivery is a call's result on its way to the script.
type delivery struct {
	c        *call
	terminal *journal.Row
	replayed bool
	result   json.RawMessage // built ahead for a replayed call
}

// replayLocked queues a call the journal answered: it reaches the script in the order the
// journal recorded, once every earlier recorded completion has.
func (r *run) replayLocked(c *call, rec *recorded) {
	c.ended = true
	c.replay = &delivery{c: c, terminal: rec.terminal, replayed: true, result: rec.replayResult(r.id)}
	r.drainLocked()
}

// deliverLocked hands a live call's result to the script, unless completions the journal
// recorded are still to come: the earlier process saw those first.
func (r *run) deliverLocked(d delivery) {
	if r.recordPendingLocked() {
		r.heldBack = append(r.heldBack, d)
		return
	}
	r.sendLocked(d)
}

// recordPendingLocked reports whether recorded completions are still to be delivered. Once the
// script leaves the record (after a paused call ran again) nothing waits for them.
func (r *run) recordPendingLocked() bool {
	return r.hist != nil && !r.offRecord && r.replayed < len(r.hist.order)
}

// drainLocked delivers recorded completions in their order as far as the script has issued
// their calls, then the live ones that waited behind them.
func (r *run) drainLocked() {
	for r.hist != nil && r.replayed < len(r.hist.order) {
		rec := r.hist.order[r.replayed]
		c := r.calls[rec.prepared.Call]
		if c == nil || c.replay == nil || c.prepared != rec.prepared {
			break
		}
		r.replayed++
		r.sendLocked(*c.replay)
	}
	if !r.recordPendingLocked() {
		held := r.heldBack
		r.heldBack = nil
		for _, d := range held {
			r.sendLocked(d)
		}
		if r.hist != nil && !r.caughtUp {
			// The replay is over: say so at once (a detached resume waits for it).
			r.caughtUp = true
			r.publishSoon()
		}
	}
}

// sendLocked gives the script a call's CallResult; results reach it in the order of these calls.
func (r *run) sendLocked(d delivery) {
	c, row := d.c, d.terminal
	status := StatusOf(row.Type)
	r.counts[status]++
	r.dirty = true
	res := d.result
	if res == nil {
		c.mu.Lock()
		thread := c.thread
		c.mu.Unlock()
		res, _ = json.Marshal(BuildResult(r.id, c.prepared, thread, row))
	}
	c.settle(res, func() {
		r.clock = row.At
		c.delivered = true
	})
	if r.x.OnEvent != nil {
		// Sent after the lock, in this order, by flushEvents: the listener may be slow.
		r.outbox = append(r.outbox, Event{Kind: "call_ended", Call: c.id, Role: c.req.Role, Node: c.req.Node, Status: status, Reason: row.Reason, Replayed: d.replayed})
	}
}

// flushEvents sends the events queued under the lock, in the order they were queued.
func (r *run) flushEvents() {
	if r.x.OnEvent == nil {
		return
	}
	r.eventsMu.Lock()
	defer r.eventsMu.Unlock()
	r.mu.Lock()
	out := r.outbox
	r.outbox = nil
	r.mu.Unlock()
	for _, e := range out {
		r.event(e)
	}
}

// replaying reports whether the script is still being given what the journal recorded.
func (r *run) replaying() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recordPendingLocked()
}

// supersedeUnmade ends the calls of the journal that the resumed script no longer made: open
// ones, and ones a pause held, which would have run again.
func (r *run) supersedeUnmade() {
	if r.hist == nil {
		return
	}
	var rows []*journal.Row
	r.mu.Lock()
	for _, id := range r.hist.ids {
		rec := r.hist.byID[id]
		if rec.settled() || r.continued[rec] {
			continue
		}
		rows = append(rows, &journal.Row{Type: journal.TypeSuperseded, Call: id, Reason: "superseded_by_resume", Detail: "the resumed script did not make this call again"})
	}
	r.mu.Unlock()
	if len(rows) > 0 {
		r.j.Append(rows...)
	}
}

// DivergenceError is a resumed script asking for another call than the journal recorded.
type DivergenceError struct {
	Index    int    // 1-based issue order
	Call     string // the recorded call's id
	Node     string
	Field    string // the first input that differs
	Want     string // the recorded value
	Got      string // the script's value
	WantHash string // input digests
	GotHash  string
}

func (e *DivergenceError) Error() string {
	return fmt.Sprintf("%s (journal %s, script %s)", e.Summary(), e.Want, e.Got)
}

// Summary names the call, both digests and the field that differs, without the values: those
// are the script's content, for the run's log and crw flow shadow, not for an error's detail.
func (e *DivergenceError) Summary() string {
	return fmt.Sprintf("divergence: call %d (%s, node %q): journal input %s, script input %s; first field that differs: %s",
		e.Index, e.Call, e.Node, e.WantHash, e.GotHash, e.Field)
}

// divergence names what differs between a recorded call and the script's.
func divergence(index int, want, got *journal.Row) *DivergenceError {
	d := &DivergenceError{Index: index, Call: want.Call, Node: want.Node, WantHash: want.InputDigest, GotHash: got.InputDigest}
	d.Field, d.Want, d.Got = firstDifference(want, got)
	return d
}

// inputFields lists a call's inputs in the order a divergence names them.
func inputFields(p *journal.Row) [][2]string {
	pair := journal.Pair{}
	if p.RequestedPair != nil {
		pair = *p.RequestedPair
	}
	return [][2]string{
		{"role", p.Role}, {"node", p.Node}, {"prompt", p.Prompt}, {"schema", p.SchemaDigest},
		{"model", pair.Model}, {"effort", pair.Effort}, {"resume", p.Handle},
	}
}

func firstDifference(want, got *journal.Row) (field, w, g string) {
	wf, gf := inputFields(want), inputFields(got)
	for i := range wf {
		if wf[i][1] != gf[i][1] {
			return wf[i][0], quote(wf[i][1]), quote(gf[i][1])
		}
	}
	return "input", want.InputDigest, got.InputDigest
}

func quote(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "…"
	}
	return fmt.Sprintf("%q", strings.TrimSpace(s))
}

// Idle implements vm.Idler: the script waits and nothing can come but live results held back
// behind recorded completions whose calls it has not made. It cannot make them while it waits,
// so its timing left the record: hand it what is held back rather than wait forever.
func (r *run) Idle() {
	r.mu.Lock()
	held := r.heldBack
	r.heldBack = nil
	for _, d := range held {
		r.sendLocked(d)
	}
	r.mu.Unlock()
	r.flushEvents()
}
