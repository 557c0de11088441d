package runner

import (
	"github.com/crw-dev/crw/engine/placer"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/journal"
)

// place asks the placer for the call's directory P: its placement, or the row the call ends
// with when it cannot have one. A rehearsal's calls work in the run's cwd.
func (r *runner) place(c *call, rec *replay.Call) (*placer.Placement, *journal.Row) {
	if r.dryRun {
		return nil, nil
	}
	return r.placer.Place(placer.Call{ID: c.id, Attempt: c.attempt, Role: c.req.Role, Node: c.req.Node, Prepared: c.prepared.At,
		Ctx: c.ctx, Interrupt: func(reason string) { r.interruptCall(c, reason) }}, rec)
}

// interruptedEnd is the terminal row of a call the engine interrupted for reason.
func interruptedEnd(reason, detail string) *journal.Row {
	if reason == placer.ReasonSupersededByAttempt {
		return journal.End{Type: journal.TypeSuperseded, Reason: reason, Detail: "a newer attempt of the call's node started"}.Row()
	}
	return journal.Held(reason, detail)
}
