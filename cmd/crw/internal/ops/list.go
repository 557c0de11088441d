package ops

import (
	"slices"

	"github.com/crw-dev/crw/store"
)

// ListStates are the states a listing keeps runs by (crw flow list --status, the list tool's
// status).
var ListStates = []string{string(store.StateRunning), string(store.StatePaused), string(store.StateWaitingDecision), string(store.StateWaitingResume), string(store.StateEnded), string(store.StateCrashed), string(store.StateQueued)}

// ListStatuses are the statuses a listing keeps runs by: how a run's last process ended it.
var ListStatuses = []string{string(store.RunCompleted), string(store.RunFailed), string(store.RunCancelled), string(store.RunPaused), string(store.RunWaitingDecision)}

// ListFilter splits the names of states and statuses a listing keeps into the engine's
// (engine.ListQuery's States and Statuses); bad is the first name that is neither, "" when
// every one is. paused and waiting_decision are a state and a status alike: a run in the one
// has the other, so they are kept as states.
func ListFilter(names []string) (states []store.State, statuses []store.RunStatus, bad string) {
	for _, s := range names {
		switch {
		case slices.Contains(ListStates, s) || s == string(store.StateUnreadable):
			states = append(states, store.State(s))
		case slices.Contains(ListStatuses, s):
			statuses = append(statuses, store.RunStatus(s))
		default:
			return nil, nil, s
		}
	}
	return states, statuses, ""
}
