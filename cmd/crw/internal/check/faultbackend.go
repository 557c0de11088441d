package check

import (
	"context"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/journal"
)

// invalidAnswer is what a faulted turn answers: prose with no JSON in it, which no schema
// accepts.
const invalidAnswer = "I could not produce the report."

// faultBackend is the fake backend with a schedule's faults laid over its answers. The fake
// opens the thread, commits the intent, sends the turn and synthesizes a valid answer (or finds
// a turn an earlier process sent, as a host that outlives the process would); the schedule then
// decides what the turn answered. The fault is a function of the call's issue order, its
// attempt and the turn, so a resumed process injects exactly what the crashed one did.
type faultBackend struct {
	backend.Backend
	sched Schedule
	seen  *injections
}

// Run implements backend.Backend.
func (b *faultBackend) Run(ctx context.Context, t backend.Turn, rec backend.Recorder) backend.Outcome {
	f := b.sched.FaultOf(t.Call.Index, t.Call.Schema != nil)
	b.seen.note(t.Call.Index, f) // a call a pause held before it was sent meets its fault on its next attempt
	out := b.Backend.Run(ctx, t, rec)
	if out.Status != backend.Answered || !faulted(f, t) {
		return out
	}
	switch f {
	case FaultRepair, FaultNullModel:
		out.Text = invalidAnswer
	case FaultRefused:
		return failed(out.TurnID, "badRequest")
	case FaultRateLimit:
		return failed(out.TurnID, "rateLimitExceeded")
	case FaultLost:
		return backend.Outcome{Status: backend.Lost, TurnID: out.TurnID}
	}
	return out
}

// faulted says whether the fault touches this turn: a repair's second turn answers validly,
// and so does the new attempt a resume makes of a call a rate limit held (the limit has
// passed, as an operator resumes once it has).
func faulted(f Fault, t backend.Turn) bool {
	switch {
	case f == FaultValid:
		return false
	case f == FaultRepair:
		return t.K == 1
	case f == FaultRateLimit:
		return t.Call.Attempt == 1
	}
	return true
}

func failed(turnID, info string) backend.Outcome {
	return backend.Outcome{Status: backend.Failed, TurnID: turnID, Failure: codex.Classify(info), Tokens: journal.Tokens{}}
}
