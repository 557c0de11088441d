package backend

import "github.com/crw-dev/crw/journal"

// Event is what a backend reports of a run besides its calls' turns: the pull contract's
// events (engine/backend/pull: an escalation to the owner, a wake of the owner and the end of
// its turn, a host's warning about a step, a step whose files could not be written). The
// engine journals each as a row of the run (Row) when the row's type is one of EventTypes, and
// refuses any other with a warning: no backend writes a row of its own making.
type Event interface {
	Row() *journal.Row
}

// EventTypes are the row types an Event may be.
var EventTypes = []string{journal.TypeEscalation, journal.TypeSessionWake, journal.TypeSessionWakeEnded,
	journal.TypeSessionHostWarning, journal.TypeStepUnwritten}
