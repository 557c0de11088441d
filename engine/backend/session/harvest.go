package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/pull"
	"github.com/crw-dev/crw/engine/backend/session/host"
)

// interruptSettle is how long a marker turn the host shows interrupted, its thread still
// loaded, is read again before it is taken as the host's interrupt rather than a subagent the
// owner closed.
const interruptSettle = 10 * time.Second

// harvest reads the bound subagent until its marker turn ends, or until the attempt is lost:
// its marker turn did not complete, its thread is notLoaded, systemError or unknown to the host,
// and the turn ended interrupted or failed without an error, or has not changed for LostAfter.
// The thread is read once more before an attempt is judged lost, and a poll later before an
// interrupted turn is taken as the host's interrupt. A read the host cannot answer
// judges nothing and leaves the time of the last change as it is. On a private host, where a
// running subagent reads notLoaded with its turn interrupted, neither is evidence: an attempt
// is lost only when its turn, its thread and its rollout have not changed for LostAfter.
func (s *step) harvest(ctx context.Context) (backend.Outcome, *pull.LostAttempt) {
	tick := time.NewTicker(s.b.cfg.Poll)
	defer tick.Stop()
	private := s.b.cfg.PrivateHost
	lastKey, lastChange, suspect := "", time.Now(), false
	var interruptedAt time.Time // when the marker turn was first seen interrupted, its thread loaded
	for {
		th, err := s.b.cfg.Host.ReadThread(ctx, s.agent)
		unknown := errors.Is(err, host.ErrUnknownThread)
		if err == nil || unknown {
			hostStatus := th.Status
			if unknown {
				hostStatus = "unknown"
			}
			turn := markerTurn(th, s.marker)
			turnStatus := ""
			if turn != nil {
				turnStatus = turn.Status
			}
			key := hostStatus + "/" + turnStatus + "/" + fmt.Sprint(len(th.Turns))
			if private {
				key += "/" + fmt.Sprint(rolloutSize(th.RolloutPath)) // the subagent at work writes its rollout
			}
			if key != lastKey {
				lastKey, lastChange = key, time.Now()
			}
			gone := hostStatus == "unknown" || hostStatus == "notLoaded" || hostStatus == "systemError"
			stopped := !private && turn != nil && (turn.Status == "interrupted" || turn.Status == "failed" && turn.Error == nil)
			stale := time.Since(lastChange) >= s.b.cfg.LostAfter
			if private && turn != nil && (turn.Status == "interrupted" || turn.Status == "failed") && turn.Error == nil {
				turn = nil // it may run on in the owner's process: only LostAfter judges it
			}
			switch {
			case gone && turnStatus != "completed" && (stopped || stale):
				if suspect {
					reason := "turn_stopped"
					if !stopped {
						reason = "no_progress"
					}
					return backend.Outcome{}, &pull.LostAttempt{Attempt: s.attempt, AgentID: s.agent, TurnID: s.turnID,
						Reason: reason, HostStatus: hostStatus, TurnStatus: turnStatus}
				}
				suspect = true // read once more before judging
				continue
			case turn != nil && turn.Status == "interrupted" && (interruptedAt.IsZero() || time.Since(interruptedAt) < interruptSettle):
				// A subagent the owner closes mid-turn shows its turn interrupted a moment
				// before its thread is gone (longer on a loaded host): the turn is read again
				// until its thread goes or interruptSettle has passed, then it is the host's.
				if interruptedAt.IsZero() {
					interruptedAt = time.Now()
				}
			case turn != nil && turn.Status != "inProgress":
				return s.outcome(th, turn), nil
			}
			suspect = false
		}
		select {
		case <-ctx.Done():
			return s.interrupt(), nil
		case <-s.b.closed.Done():
			return closedOutcome(), nil
		case <-tick.C:
		}
	}
}

// rolloutSize is the size of a subagent's rollout file (-1 when it cannot be read).
func rolloutSize(path string) int64 {
	if path == "" {
		return -1
	}
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// closedOutcome is a step's end when its backend closed under it (its process is going away):
// the step stays as the bus and the host have it, for a later process to go on with.
func closedOutcome() backend.Outcome {
	return backend.Outcome{Status: backend.Lost, Open: true, Cause: errors.New("the session backend closed")}
}

// outcome is how an ended turn ends the step, with the turn's tokens from the subagent's
// rollout (a tokens_unmeasured warning when it has none: the run's figure then leaves it out).
func (s *step) outcome(th host.Thread, turn *host.Turn) backend.Outcome {
	out := backend.Outcome{TurnID: turn.ID}
	switch {
	case turn.Status == "completed" && turn.HasAnswer:
		out.Status, out.Text = backend.Answered, turn.Answer
	case turn.Status == "completed":
		out.Status, out.Text = backend.Answered, ""
	case turn.Error != nil:
		out.Status, out.Failure = backend.Failed, codex.Classify(turn.Error.Kind())
	default:
		out.Status = backend.Interrupted
	}
	if s.p.Counted != nil && s.p.Sent != nil && turn.ID == s.p.Sent.TurnID {
		// An earlier process measured this turn and recorded it in the next turn's step.
		out.Tokens = *s.p.Counted
	} else if tokens, ok := codex.RolloutTokens(th.RolloutPath, turn.ID); ok {
		out.Tokens = tokens
	} else {
		s.rec.Warn("tokens_unmeasured", "the turn "+turn.ID+" of "+s.marker+" has no usage in the subagent's rollout; pauses: false")
	}
	return out
}

// StopTurns implements backend.Stopper: an earlier process's turns of the call, interrupted on
// the host and read until none runs, before the call ends without them (seed 003).
func (b *Backend) StopTurns(ctx context.Context, call backend.Call, th backend.Thread, turnIDs []string) {
	if th.ID == "" || len(turnIDs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.InterruptWait)
	defer cancel()
	for _, turn := range turnIDs {
		_ = b.cfg.Host.InterruptTurn(ctx, th.ID, turn)
	}
	for {
		t, err := b.cfg.Host.ReadThread(ctx, th.ID)
		if errors.Is(err, host.ErrUnknownThread) {
			return
		}
		if err == nil && !runsAny(t, turnIDs) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(b.cfg.Poll):
		}
	}
}

// runsAny tells whether one of the turns is still in progress on the thread.
func runsAny(th host.Thread, turnIDs []string) bool {
	for _, t := range th.Turns {
		if t.Status == "inProgress" && slices.Contains(turnIDs, t.ID) {
			return true
		}
	}
	return false
}

var _ backend.Stopper = (*Backend)(nil)

// interrupt stops the bound turn on the host and reads it until it ends.
func (s *step) interrupt() backend.Outcome {
	ctx, cancel := context.WithTimeout(context.Background(), s.b.cfg.InterruptWait)
	defer cancel()
	_ = s.b.cfg.Host.InterruptTurn(ctx, s.agent, s.turnID)
	for {
		th, err := s.b.cfg.Host.ReadThread(ctx, s.agent)
		if err == nil {
			if turn := markerTurn(th, s.marker); turn == nil || turn.Status != "inProgress" {
				return backend.Outcome{Status: backend.Interrupted, TurnID: s.turnID}
			}
		}
		select {
		case <-ctx.Done():
			return backend.Outcome{Status: backend.Interrupted, TurnID: s.turnID}
		case <-time.After(s.b.cfg.Poll):
		}
	}
}
