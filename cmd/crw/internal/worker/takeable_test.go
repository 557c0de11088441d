package worker

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// TestWhatAWorkerTakes: a run no process holds that a process can take on (crashed, also after
// its process was told to stop, lost its lease or was not answered by the store; waiting for a resume), not one that ended,
// runs, waits for a decision or its limit, stopped on an error for a person, or is a session
// run.
func TestWhatAWorkerTakes(t *testing.T) {
	t.Parallel()
	stopped := func(code, reason string) *journal.RunError { return &journal.RunError{Code: code, Reason: reason} }
	for _, tt := range []struct {
		name string
		st   store.Status
		take bool
	}{
		{"crashed", store.Status{State: store.StateCrashed, Backend: "fake"}, true},
		{"queued", store.Status{State: store.StateQueued, Backend: "fake"}, true},
		{"waiting for a resume", store.Status{State: store.StateWaitingResume, Backend: "app-server"}, true},
		{"its process was told to stop", store.Status{State: store.StateCrashed, Error: stopped("run_unavailable", "process_stopped")}, true},
		{"its process lost its lease", store.Status{State: store.StateCrashed, Error: stopped("run_unavailable", "lease_lost")}, true},
		{"the store did not answer its process", store.Status{State: store.StateCrashed, Error: stopped("run_unavailable", "store_unreachable")}, true},
		{"its journal could not be written", store.Status{State: store.StateCrashed, Error: stopped("capability_unavailable", "journal_write_failed")}, false},
		{"a divergence", store.Status{State: store.StateCrashed, Error: stopped("revision_conflict", "divergence")}, false},
		{"an error of no code of crw's", store.Status{State: store.StateCrashed, Error: stopped("capability_unavailable", "process_stopped")}, false},
		{"a row out of place", store.Status{State: store.StateCrashed, Error: stopped("capability_unavailable", "row_out_of_place")}, false},
		{"a session run", store.Status{State: store.StateCrashed, Backend: "session"}, false},
		{"ended", store.Status{State: store.StateEnded}, false},
		{"running", store.Status{State: store.StateRunning}, false},
		{"paused", store.Status{State: store.StatePaused}, false},
		{"waiting for a decision", store.Status{State: store.StateWaitingDecision}, false},
	} {
		assert.Equal(t, tt.take, Takeable(&tt.st), tt.name)
	}
}
