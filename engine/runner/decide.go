package runner

import (
	"encoding/json"
	"errors"

	"github.com/crw-dev/crw/runtime/modules/crw"
)

// ReasonProcessLockUnavailable is the reason of the warning row of a process that holds its run
// without a process lock of its own.
const ReasonProcessLockUnavailable = "process_lock_unavailable"

// errWaitingDecision is the cause of a process's end when its script waits for nothing but
// decisions: the run is not over, and crw flow answer resumes it.
var errWaitingDecision = errors.New("the run waits for a decision")

// Decide implements crw.Host: the run's book of decisions asks it (engine/runner/decisions).
func (r *runner) Decide(d crw.Decision, settle func(json.RawMessage, error)) error {
	return r.book.Decide(d, settle)
}

// Effect implements crw.Host: the run's book of decisions gives the verdict.
func (r *runner) Effect(call string, settle func(json.RawMessage, error)) error {
	return r.book.Effect(call, settle)
}

// SetPost implements vm.Poster: the verdicts reach the script's loop through it, and the calls
// the script issues start from it.
func (r *runner) SetPost(post func(func() error)) {
	r.batch.Post = post
	r.book.SetPost(post)
}

// waitsOnlyForDecisions reports whether the script can get nothing but decisions' answers:
// no call of it is unsettled and the record has nothing left to give.
func (r *runner) waitsOnlyForDecisions() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls) == 0 && r.book.Waiting() && !r.replay.Due()
}
