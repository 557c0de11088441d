// Package callstate is the state machine of one generation of an agent.call: the states a call
// goes through between its prepared row and its terminal row, and the rows that move it from one
// to the next, in one table (transitions). Every row a call writes is a transition of that table:
// the runner asks the call's Machine before it appends a row, and a row the table does not allow
// is an error that names the call, the state it is in, the row, and the rows that led there. The
// same table checks a journal a run wrote (Check), which the simulator does for every run.
//
// A generation starts with a prepared row; a call run again (held, or left open by a process
// that died) starts a new generation with a new prepared row and a new Machine.
package callstate

import (
	"fmt"
	"strings"

	"github.com/crw-dev/crw/journal"
)

// State is where a generation of a call is.
type State uint8

const (
	// Prepared: the prepared row is written; the call waits for the pool and the gate.
	Prepared State = iota
	// Placed: its call-private directory is made (workspace_placed).
	Placed
	// Threaded: a thread is started for it and no turn is yet.
	Threaded
	// TaskStep: a pull backend published the task turn as a step (a subagent may bind to it,
	// or be lost and the step published again).
	TaskStep
	// TaskTurn: the task turn was sent (turn_started k 1).
	TaskTurn
	// RepairStep: the repair turn was published as a step.
	RepairStep
	// RepairTurn: the repair turn was sent (turn_started k 2).
	RepairTurn
	// Ended: a terminal row is written.
	Ended
)

var stateNames = [...]string{"prepared", "placed", "threaded", "task_step", "task_turn", "repair_step", "repair_turn", "ended"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", s)
}

// Event is what a row of a call does to its generation.
type Event uint8

const (
	EventPlaced     Event = iota // workspace_placed
	EventCheckpoint              // checkpoint_started: a continuation's record of its conversation
	EventThread                  // thread_started
	EventTaskStep                // step_published, k 1
	EventRepairStep              // step_published, k 2
	EventTaskTurn                // turn_started, k 1
	EventRepairTurn              // turn_started, k 2
	EventLost                    // session_attempt_lost: a step's subagent will not finish
	EventInterrupt               // interrupt_requested
	EventEnd                     // a terminal row
	EventNone                    // a row that moves no call (a warning, an escalation)
)

var eventNames = [...]string{"workspace_placed", "checkpoint_started", "thread_started", "step_published k 1", "step_published k 2",
	"turn_started k 1", "turn_started k 2", "session_attempt_lost", "interrupt_requested", "terminal", "none"}

func (e Event) String() string {
	if int(e) < len(eventNames) {
		return eventNames[e]
	}
	return fmt.Sprintf("event(%d)", e)
}

// transitions is the table: for each state, the events it takes and the state each leads to.
// An interrupt (once) and a terminal row are taken in every state before Ended (Machine.next);
// Ended takes nothing: a generation has one terminal row.
var transitions = map[State]map[Event]State{
	Prepared: {
		EventPlaced: Placed, EventCheckpoint: Prepared, EventThread: Threaded, EventTaskStep: TaskStep,
		// A generation that goes on with the repair its held one was in has no task turn.
		EventRepairStep: RepairStep, EventRepairTurn: RepairTurn,
	},
	Placed: {
		EventCheckpoint: Placed, EventThread: Threaded, EventTaskStep: TaskStep, EventRepairStep: RepairStep,
	},
	Threaded: {
		EventTaskTurn: TaskTurn, EventRepairTurn: RepairTurn,
	},
	TaskStep: {
		// A subagent binds to the step (its thread), or is lost and the step published again.
		EventThread: TaskStep, EventTaskStep: TaskStep, EventLost: TaskStep, EventTaskTurn: TaskTurn,
	},
	TaskTurn: {
		EventRepairStep: RepairStep, EventRepairTurn: RepairTurn, EventLost: TaskStep,
	},
	RepairStep: {
		EventThread: RepairStep, EventRepairStep: RepairStep, EventLost: RepairStep, EventRepairTurn: RepairTurn,
	},
	RepairTurn: {
		EventLost: RepairStep,
	},
	Ended: {},
}

// EventOf is what row does to the generation of its call.
func EventOf(row *journal.Row) Event {
	switch row.Type {
	case journal.TypeWorkspacePlaced:
		return EventPlaced
	case journal.TypeCheckpointStarted:
		return EventCheckpoint
	case journal.TypeThreadStarted:
		return EventThread
	case journal.TypeStepPublished:
		if row.K == 2 {
			return EventRepairStep
		}
		return EventTaskStep
	case journal.TypeTurnStarted:
		if row.K == 2 {
			return EventRepairTurn
		}
		return EventTaskTurn
	case journal.TypeAttemptLost:
		return EventLost
	case journal.TypeInterruptRequested:
		return EventInterrupt
	}
	if journal.IsTerminal(row.Type) {
		return EventEnd
	}
	return EventNone
}

// Machine is one generation of a call. It is not safe for concurrent use: its call's rows are
// appended one at a time.
type Machine struct {
	call        string
	state       State
	interrupted bool
	endType     string
	history     []string // the rows taken, for an error to show the way it came
}

// New is a generation whose prepared row was just written.
func New(call string) *Machine {
	return &Machine{call: call, history: []string{journal.TypePrepared}}
}

// State is where the generation is.
func (m *Machine) State() State { return m.state }

// ErrTransition is what a row the table does not allow gives (errors.As).
type ErrTransition struct {
	Call    string
	State   State
	Row     string // the row's type (and k)
	History []string
}

func (e *ErrTransition) Error() string {
	return fmt.Sprintf("call %s: a %s row is no transition from state %s (its rows: %s)", e.Call, e.Row, e.State, strings.Join(e.History, ", "))
}

// maxHistory bounds the rows an error lists.
const maxHistory = 32

// Apply takes row, a row of the machine's call, and moves the machine, or says why the table
// does not allow it (the machine is then as it was). A row that moves no call is taken as is.
func (m *Machine) Apply(row *journal.Row) error {
	ev := EventOf(row)
	next, ok := m.next(ev)
	if !ok {
		return &ErrTransition{Call: m.call, State: m.state, Row: rowName(row), History: append([]string(nil), m.history...)}
	}
	m.state = next
	switch ev {
	case EventInterrupt:
		m.interrupted = true
	case EventEnd:
		m.endType = row.Type
	}
	if ev != EventNone && len(m.history) < maxHistory {
		m.history = append(m.history, rowName(row))
	}
	return nil
}

func (m *Machine) next(ev Event) (State, bool) {
	switch {
	case ev == EventNone:
		return m.state, true
	case m.state == Ended:
		return m.state, false
	case ev == EventInterrupt:
		return m.state, !m.interrupted // asked for once
	case ev == EventEnd:
		return Ended, true
	}
	next, ok := transitions[m.state][ev]
	return next, ok
}

// rowName names a row as an error shows it: its event's name where that says more than its
// type (a step's or a turn's k), no string made for it.
func rowName(row *journal.Row) string {
	switch ev := EventOf(row); ev {
	case EventEnd, EventNone:
		return row.Type
	default:
		return ev.String()
	}
}

// Check follows every call of a journal's rows through the table, a generation per prepared
// row: the first row a call takes against it is the error. A new generation may start only
// where a resume starts one: after the call was held, or left without a terminal row.
func Check(rows []journal.Row) error {
	gens := map[string]*Machine{}
	for i := range rows {
		row := &rows[i]
		if row.Call == "" {
			continue
		}
		m := gens[row.Call]
		if row.Type == journal.TypePrepared {
			if m != nil && m.state == Ended && m.endType != journal.TypeHeld {
				return fmt.Errorf("row %d: %w", row.Seq, &ErrTransition{Call: row.Call, State: m.state, Row: rowName(row), History: m.history})
			}
			gens[row.Call] = New(row.Call)
			continue
		}
		if m == nil {
			if EventOf(row) == EventNone {
				continue
			}
			return fmt.Errorf("row %d: call %s has a %s row before its prepared row", row.Seq, row.Call, rowName(row))
		}
		if err := m.Apply(row); err != nil {
			return fmt.Errorf("row %d: %w", row.Seq, err)
		}
	}
	return nil
}
