package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/pull"
	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/host"
	"github.com/crw-dev/crw/journal"
)

// awaitBind waits for the subagent of the step: a report in the inbox, or the marker found on
// the host. ok is false when the turn ended before a bind (its outcome is returned).
func (s *step) awaitBind(ctx context.Context) (backend.Outcome, bool) {
	b := s.b
	tick := time.NewTicker(b.cfg.Poll)
	defer tick.Stop()
	written := b.bus.Published(s.t.Call.ID, s.t.K, s.attempt)
	for polls := 1; ; polls++ {
		select {
		case <-ctx.Done():
			// A pause, a cancel or a deadline. A subagent that took the step without a report
			// (the send_input's subagent, or a spawn found by its marker) has a turn running:
			// it is bound, then interrupted, rather than left at work (seed 003).
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.InterruptWait)
			found := written && s.lookup(lctx)
			cancel()
			if found {
				return s.interrupt(), false
			}
			_ = b.bus.Retract(s.t.Call.ID, s.t.K, s.attempt)
			s.closeUnwritten(false)
			return backend.Outcome{Status: backend.Interrupted}, false
		case <-b.closed.Done():
			s.closeUnwritten(false)
			return closedOutcome(), false
		case r := <-s.reports:
			reply := s.judge(ctx, r.Agent)
			_ = b.bus.Answer(r, reply)
			if reply.Reply == bus.ReplyBound {
				return backend.Outcome{}, true
			}
		case <-tick.C:
			if !written {
				written = s.publish(s.packet())
			}
			if polls%b.cfg.LookupEvery == 0 && s.lookup(ctx) {
				return backend.Outcome{}, true
			}
		}
	}
}

// lookup looks the step's marker up on the host: the subagent that carries it for a spawn,
// the marker turn on the subagent for a send_input; it binds what it finds.
func (s *step) lookup(ctx context.Context) bool {
	if s.file.Action == bus.ActionSendInput {
		return s.judge(ctx, s.file.AgentID).Reply == bus.ReplyBound
	}
	threads, err := s.b.cfg.Host.Subagents(ctx)
	if err != nil {
		return false
	}
	for _, th := range threads {
		if th.ParentThreadID == s.b.cfg.Owner && bus.MarkerOf(th.Preview) == s.marker {
			if s.judge(ctx, th.ID).Reply == bus.ReplyBound {
				return true
			}
		}
	}
	if !s.recovered {
		return false
	}
	// The owner's turns and the ledger are read whole: at the first lookup, then every
	// joinEvery lookups, not at each one while the step waits.
	s.lookups++
	return (s.lookups-1)%joinEvery == 0 && s.joinLedger(ctx)
}

// joinEvery is how many marker lookups of a recovered step go between two joins with the
// owner's spawn calls.
const joinEvery = 16

// joinLedger looks a step an earlier process published up by the owner's spawn calls: the
// call its ledger line names, else a spawn whose message carries the marker. What it cannot
// tie as it should is a session_host_warning row, once a step.
func (s *step) joinLedger(ctx context.Context) bool {
	spawner, ok := s.b.cfg.Host.(host.OwnerSpawner)
	if !ok || s.b.cfg.Ledger == nil {
		return false
	}
	spawns, err := spawner.OwnerSpawns(ctx, s.b.cfg.Owner)
	if err != nil {
		return false
	}
	lines, _ := s.b.cfg.Ledger(s.b.cfg.Owner)
	calls := map[string]bool{}
	for _, l := range lines {
		if l.Op == s.marker && l.ToolUseID != "" {
			calls[l.ToolUseID] = true
		}
	}
	var tied []host.Spawn
	var warnings []string
	for _, sp := range spawns {
		switch {
		case calls[sp.CallID] && bus.MarkerOf(sp.Prompt) != s.marker:
			warnings = append(warnings, "ledger_op_differs")
		case calls[sp.CallID]:
			tied = append(tied, sp)
		case bus.MarkerOf(sp.Prompt) == s.marker:
			tied = append(tied, sp)
			warnings = append(warnings, "no_ledger_line")
		}
	}
	if len(tied) > 1 {
		warnings = append(warnings, "several_spawns")
	}
	shown := map[string]bool{}
	for _, sp := range spawns {
		shown[sp.CallID] = true
	}
	for call := range calls {
		if !shown[call] {
			warnings = append(warnings, "window_ended") // the ledger names a call the owner's turns no longer show
		}
	}
	if len(warnings) > 0 && !s.hostWarned {
		s.hostWarned = true
		slices.Sort(warnings)
		s.b.cfg.Report(pull.HostWarning{Op: s.file.Op, Marker: s.marker, Warnings: slices.Compact(warnings),
			Detail: fmt.Sprintf("the owner's spawns tied to %s: %d", s.marker, len(tied))})
	}
	for _, sp := range tied {
		if s.judge(ctx, sp.Agent).Reply == bus.ReplyBound {
			return true
		}
	}
	return false
}

// judge decides a subagent reported for the step, and binds it when it is the step's.
func (s *step) judge(ctx context.Context, agent string) bus.Reply {
	reply := bus.Reply{Marker: s.marker, Agent: agent}
	th, err := s.b.cfg.Host.ReadThread(ctx, agent)
	switch {
	case errors.Is(err, host.ErrUnknownThread) && s.b.cfg.PrivateHost:
		// Codex writes a subagent's rollout lazily: a private host may not see it yet.
		reply.Reply, reply.Detail = bus.ReplyRetry, "the run's private app server does not see the subagent on disk yet"
		return reply
	case errors.Is(err, host.ErrUnknownThread):
		reply.Reply, reply.Detail = bus.ReplyRefused, "the host does not know the subagent"
		return reply
	case err != nil:
		reply.Reply, reply.Detail = bus.ReplyRetry, "the host cannot be read yet"
		return reply
	case th.ParentThreadID != s.b.cfg.Owner:
		reply.Reply, reply.Detail = bus.ReplyRefused, "the subagent is not a subagent of the run's owner thread"
		return reply
	}
	turn := markerTurn(th, s.marker)
	if turn == nil {
		reply.Reply, reply.Detail = bus.ReplyRetry, "the subagent has no turn that carries the marker yet"
		return reply
	}
	if s.file.Action == bus.ActionSpawn && s.t.Thread.ID != "" && th.ID != s.t.Thread.ID {
		// An earlier process bound another subagent to this attempt.
		reply.Reply, reply.Detail = bus.ReplyClose, secondSubagent
		return reply
	}
	if s.file.Action == bus.ActionSpawn && s.t.Thread.ID == "" {
		if want := s.t.Call.Pair; (want.Model != "" && want.Model != th.Model) || (want.Effort != "" && want.Effort != th.Effort) {
			reply.Reply, reply.Model, reply.Effort = bus.ReplyPairMismatch, want.Model, want.Effort
			reply.Detail = fmt.Sprintf("the subagent runs %s/%s, the role's pair is %s/%s: close it and spawn again with the role's pair",
				th.Model, th.Effort, orAny(want.Model), orAny(want.Effort))
			return reply
		}
		if th.AgentRole != "" && th.AgentRole != s.file.AgentType {
			s.rec.Warn("session_agent_role_mismatch", fmt.Sprintf("the subagent was spawned as %q, the step's agent type is %q", th.AgentRole, s.file.AgentType))
		}
		ran := journal.Pair{Model: th.Model, Effort: th.Effort}
		s.ran = ran
		var prior []journal.Pair
		for _, p := range s.prior {
			if p != ran && !slices.Contains(prior, p) {
				prior = append(prior, p)
			}
		}
		s.rec.Thread(backend.Thread{ID: th.ID, Model: th.Model, Effort: th.Effort, Cwd: s.file.Workspace, RolloutPath: th.RolloutPath,
			Bind: &pull.Bind{Via: Name, HostCwd: th.Cwd, ParentThreadID: th.ParentThreadID, AgentRole: th.AgentRole, Marker: s.marker, Attempt: s.attempt,
				PairCheck: pairCheck(s.t.Call.Pair), PriorPairs: prior}})
	}
	s.rec.Started(turn.ID)
	if err := s.rec.Commit(); err != nil {
		reply.Reply, reply.Detail = bus.ReplyRetry, "the run cannot record the bind"
		return reply
	}
	s.agent, s.turnID = th.ID, turn.ID
	s.b.setBound(s.marker, th.ID)
	_ = s.b.bus.Retract(s.t.Call.ID, s.t.K, s.attempt)
	reply.Reply = bus.ReplyBound
	return reply
}

// decidedPartDiffers tells which decided part of the call's pair (model, else effort) differs
// from what a subagent ran; a part either leaves open is not compared.
func decidedPartDiffers(want, ran journal.Pair) (string, bool) {
	switch {
	case want.Model != "" && ran.Model != "" && want.Model != ran.Model:
		return "model", true
	case want.Effort != "" && ran.Effort != "" && want.Effort != ran.Effort:
		return "effort", true
	}
	return "", false
}

func partOf(p journal.Pair, part string) string {
	if part == "model" {
		return p.Model
	}
	return p.Effort
}

// pairCheck names what a bind could not check of the role's pair: the parts the role table
// leaves to the host.
func pairCheck(want journal.Pair) string {
	switch {
	case want.Model == "" && want.Effort == "":
		return "pair_unchecked"
	case want.Effort == "":
		return "effort_unchecked"
	case want.Model == "":
		return "model_unchecked"
	}
	return ""
}

func orAny(s string) string {
	if s == "" {
		return "(the host's)"
	}
	return s
}

// markerTurn is the subagent's turn whose first user message carries the marker.
func markerTurn(th host.Thread, marker string) *host.Turn {
	for i := range th.Turns {
		if bus.MarkerOf(th.Turns[i].FirstUserMessage) == marker {
			return &th.Turns[i]
		}
	}
	return nil
}
