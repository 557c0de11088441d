package pull

import (
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/journal"
)

// The events a pull backend reports of its run (backend.Config.Report): each is the row of
// one of backend.EventTypes.
var (
	_ backend.Event = Escalation{}
	_ backend.Event = Wake{}
	_ backend.Event = WakeEnded{}
	_ backend.Event = HostWarning{}
	_ backend.Event = StepUnwritten{}
)

// Escalation tells that steps have waited for the owner past the run's bound.
type Escalation struct {
	Reason, Owner, Detail string
	Ops                   []string // the waiting steps' ops
	Batch                 string
	WaitingSeconds        int64
}

// Wake is a wake of the owner: a turn on its thread that tells it what waits (Staged, TurnID
// when the turn started), or why none was (Reason, Detail).
type Wake struct {
	WakeID, Batch, Owner, OwnerStatus string
	Ops                               []string
	WaitingSeconds                    int64
	Renotify                          int // the how-many-th reminder of the same steps (0: the first wake)
	TurnID                            string
	Staged                            bool
	Reason, Detail                    string
}

// WakeEnded is the end of a wake's turn on the owner's thread.
type WakeEnded struct {
	WakeID, TurnID, TurnStatus, Owner string
}

// HostWarning is what the host's view of a step warns of.
type HostWarning struct {
	Op, Marker, Detail string
	Warnings           []string
}

// StepUnwritten is a step whose files could not be written.
type StepUnwritten struct {
	Call, Marker, Action string
	K, Attempt           int
	Unwritten            journal.Unwritten
}

// Row is the escalation row.
func (e Escalation) Row() *journal.Row {
	return &journal.Row{Type: journal.TypeEscalation, Reason: e.Reason, Owner: e.Owner, Ops: e.Ops, Batch: e.Batch,
		WaitingSeconds: e.WaitingSeconds, Detail: e.Detail}
}

// Row is the session_wake row.
func (w Wake) Row() *journal.Row {
	staged := w.Staged
	return &journal.Row{Type: journal.TypeSessionWake, WakeID: w.WakeID, Batch: w.Batch, Ops: w.Ops, Owner: w.Owner, OwnerStatus: w.OwnerStatus,
		WaitingSeconds: w.WaitingSeconds, Renotify: w.Renotify, TurnID: w.TurnID, Staged: &staged, Reason: w.Reason, Detail: w.Detail}
}

// Row is the session_wake_ended row.
func (w WakeEnded) Row() *journal.Row {
	return &journal.Row{Type: journal.TypeSessionWakeEnded, WakeID: w.WakeID, TurnID: w.TurnID, TurnStatus: w.TurnStatus, Owner: w.Owner}
}

// Row is the session_host_warning row.
func (h HostWarning) Row() *journal.Row {
	return &journal.Row{Type: journal.TypeSessionHostWarning, Op: h.Op, Marker: h.Marker, Warnings: h.Warnings, Detail: h.Detail}
}

// Row is the step_unwritten row.
func (s StepUnwritten) Row() *journal.Row {
	u := s.Unwritten
	return &journal.Row{Type: journal.TypeStepUnwritten, Call: s.Call, Marker: s.Marker, K: s.K, Attempt: s.Attempt, Action: s.Action,
		Rare: &journal.Rare{Unwritten: &u}}
}
