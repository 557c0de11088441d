package pull_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/pull"
	"github.com/crw-dev/crw/journal"
)

// TestEventsAreTheRunsRows: each event a backend reports is the row of its type, with the
// fields it carries and no other.
func TestEventsAreTheRunsRows(t *testing.T) {
	t.Parallel()
	staged, notStaged := true, false
	written := false
	for _, tt := range []struct {
		event backend.Event
		want  *journal.Row
	}{
		{pull.Escalation{Reason: "session_unresponsive", Owner: "th", Ops: []string{"c1"}, Batch: "b1", WaitingSeconds: 7200, Detail: "d"},
			&journal.Row{Type: "escalation", Reason: "session_unresponsive", Owner: "th", Ops: []string{"c1"}, Batch: "b1", WaitingSeconds: 7200, Detail: "d"}},
		{pull.Wake{WakeID: "b1/e2", Batch: "b1", Owner: "th", OwnerStatus: "idle", Ops: []string{"c1"}, WaitingSeconds: 60, Renotify: 1, TurnID: "t9", Staged: true},
			&journal.Row{Type: "session_wake", WakeID: "b1/e2", Batch: "b1", Owner: "th", OwnerStatus: "idle", Ops: []string{"c1"}, WaitingSeconds: 60,
				Renotify: 1, TurnID: "t9", Staged: &staged}},
		{pull.Wake{WakeID: "b1", Reason: "no_owner_host", Detail: "d"},
			&journal.Row{Type: "session_wake", WakeID: "b1", Reason: "no_owner_host", Detail: "d", Staged: &notStaged}},
		{pull.WakeEnded{WakeID: "b1", TurnID: "t9", TurnStatus: "completed", Owner: "th"},
			&journal.Row{Type: "session_wake_ended", WakeID: "b1", TurnID: "t9", TurnStatus: "completed", Owner: "th"}},
		{pull.HostWarning{Op: "c1/t1", Marker: "c1/t1-a1", Warnings: []string{"w"}, Detail: "d"},
			&journal.Row{Type: "session_host_warning", Op: "c1/t1", Marker: "c1/t1-a1", Warnings: []string{"w"}, Detail: "d"}},
		{pull.StepUnwritten{Call: "c1", Marker: "c1/t1-a1", Action: "spawn", K: 1, Attempt: 1, Unwritten: journal.Unwritten{Failures: 3, Written: &written}},
			&journal.Row{Type: "step_unwritten", Call: "c1", Marker: "c1/t1-a1", Action: "spawn", K: 1, Attempt: 1,
				Rare: &journal.Rare{Unwritten: &journal.Unwritten{Failures: 3, Written: &written}}}},
	} {
		assert.Equal(t, tt.want, tt.event.Row())
	}
}
