package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/pull"
	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/roles"
	"github.com/crw-dev/crw/journal"
)

// step is one turn on its way: published, bound, harvested.
type step struct {
	b       *Backend
	t       backend.Turn
	p       pull.Turn // what the engine tells a pull backend of it besides
	rec     pull.Recorder
	marker  string
	attempt int
	// rerun: this step runs its turn again, the attempt before it lost.
	rerun   bool
	reports chan bus.Report

	file   bus.StepFile
	agent  string // the bound subagent
	turnID string

	failures     int // writes of the step that failed since it was last written
	firstFailure time.Time
	lastFailure  time.Time
	lastError    string // the last failure's error

	note         string         // what the packet says of earlier attempts
	prior        []journal.Pair // the pairs earlier attempts, or the handle's subagent, ran
	ran          journal.Pair   // the bound subagent's
	conversation string         // what a continuation's packet says of the conversation it goes on from

	recovered  bool // an earlier process published the step
	lookups    int  // the marker lookups of a recovered step so far
	hostWarned bool // its session_host_warning is written
}

// register makes marker the one the step waits under ("": none); reports for the marker it
// had are told close from now on.
func (s *step) register(marker string) {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.marker != "" {
		delete(b.waiting, s.marker)
	}
	if marker != "" {
		b.waiting[marker] = s.reports
		s.marker = marker
	}
}

func (s *step) run(ctx context.Context) backend.Outcome {
	b := s.b
	s.file = s.stepFile()
	s.recovered = s.p.Sent != nil
	if s.t.Conversation != nil && s.file.Action == bus.ActionSpawn {
		// A continuation runs on a new subagent, which cannot fork the handle's: its packet
		// carries the journal's record of the conversation instead.
		ex, err := s.t.Conversation()
		if err != nil {
			return backend.Outcome{Status: backend.Unavailable, Cause: err}
		}
		s.conversation = bus.ConversationSection(ex)
		if s.p.Sent == nil && s.p.Resumed {
			calls := make([]string, len(ex))
			for i, e := range ex {
				calls[i] = e.Call
			}
			s.rec.CheckpointStarted(pull.Checkpoint{Handle: s.t.Call.Resume, Calls: calls, Digest: digest(s.conversation)})
		}
		if n := len(ex); n > 0 {
			// The call it continues: its packet, and its answer in a file beside this call's
			// steps (the checkpoint's digest is of the conversation alone).
			from := ex[n-1]
			answerFile := ""
			if from.Answer != "" {
				answerFile, _ = b.bus.Attach(s.t.Call.ID, "continues-"+from.Call+"-answer.md", []byte(from.Answer))
			}
			s.conversation += bus.ContinuesSection(from.Call, from.Packet, answerFile)
		}
	}
	if sent := s.p.Sent; sent != nil && sent.Lost != "" {
		// The journal has the attempt lost already: on to the next one, without judging it again.
		s.agent = s.t.Thread.ID
		if out, ok := s.nextAttempt(pull.LostAttempt{Attempt: s.attempt, AgentID: s.agent, Reason: sent.Lost}, true); !ok {
			return out
		}
	} else if sent != nil && sent.TurnID != "" && s.t.Thread.ID != "" && s.t.K == 1 || sent != nil && sent.TurnID != "" && s.file.Action == bus.ActionSendInput {
		// An earlier process bound the step: the call goes on reading that turn.
		s.agent, s.turnID = s.t.Thread.ID, sent.TurnID
		b.setBound(s.marker, s.agent)
		_ = b.bus.Retract(s.t.Call.ID, s.t.K, s.attempt)
	} else if s.p.Sent == nil {
		if out, ok := s.dispatch(); !ok {
			return out
		}
	} else if !b.bus.Published(s.t.Call.ID, s.t.K, s.attempt) {
		// An earlier process published it; the step file is gone with a retraction or was never
		// written: it is published again (the same step, no new row) once the host shows nothing.
		if !s.lookup(ctx) {
			s.publish(s.packet())
		}
	}
	for {
		if s.agent == "" {
			if out, ok := s.awaitBind(ctx); !ok {
				return out
			}
		}
		out, lost := s.harvest(ctx)
		if lost == nil {
			return out
		}
		if out, ok := s.nextAttempt(*lost, false); !ok {
			return out
		}
	}
}

// dispatch journals the step (its row committed first) and publishes it.
func (s *step) dispatch() (backend.Outcome, bool) {
	packet := s.packet()
	st := pull.Step{Marker: s.marker, Op: s.file.Op, Attempt: s.attempt, Action: s.file.Action, Input: s.file.Message,
		Packet: s.file.Packet, PacketDigest: digest(packet), Role: s.t.Call.Role, AgentType: s.file.AgentType,
		Model: s.file.Model, Effort: s.file.ReasoningEffort, Workspace: s.file.Workspace, AgentID: s.file.AgentID,
		Note: s.note, ConversationTurn: s.t.K, PreviousAnswer: s.t.PreviousAnswer, CallTokens: s.p.Spent}
	if st.Action == bus.ActionSendInput {
		st.TokensSeen = s.p.Spent // the subagent's earlier turns: the call's (a lost attempt's turn counts nothing)
	}
	if s.rerun {
		// The next attempt of a lost turn: a turn run again, at the place of the one it
		// replaces. A later turn of the same attempt (its repair) replaces nothing.
		st.ReplacesTurn = s.t.K
	}
	s.rec.Dispatched(st)
	if err := s.rec.Commit(); err != nil {
		return backend.Outcome{Status: backend.Unavailable, Cause: err}, false
	}
	s.publish(packet)
	return backend.Outcome{}, true
}

// nextAttempt gives up on a lost attempt: its row (unless recorded already), a close step for
// its subagent, and the next attempt's step, a spawn in the same workspace whose packet says why.
func (s *step) nextAttempt(lost pull.LostAttempt, recorded bool) (backend.Outcome, bool) {
	if !recorded {
		s.rec.AttemptLost(lost)
		// Durable before the close step acts on the host: a process that can no longer write
		// the journal (its hold on the run lost) leaves the subagent to the next process.
		if err := s.rec.Commit(); err != nil {
			return backend.Outcome{Status: backend.Unavailable, Cause: err}, false
		}
	}
	s.b.endBinding(s.marker) // a late report of another subagent for it is told it ended
	if s.agent != "" {
		s.b.bus.Unbind(s.t.Call.ID, s.attempt)
		if err := s.b.closeStep(s.t.Call.ID, s.attempt, s.agent); err != nil {
			s.rec.Warn("step_unwritten", "the close step of "+s.agent+" could not be written")
		}
	}
	s.note = fmt.Sprintf("Attempt %d of this turn was cut off: its subagent stopped before it answered (%s). Do the task from the start.", s.attempt, lost.Reason)
	if s.t.Call.Role == "executor" || s.t.Call.Role == "executor-t1" {
		s.note += fmt.Sprintf(" The workspace may hold its changes: read git -C %s status and the diff first.", s.file.Workspace)
	}
	s.register(bus.Marker(s.t.Call.ID, s.t.K, s.attempt+1))
	s.attempt++
	s.rerun = true
	if s.agent != "" {
		s.prior = append(s.prior, s.ran)
	}
	s.agent, s.turnID = "", ""
	s.t.Thread = backend.Thread{} // the next attempt spawns a subagent of its own
	s.file = s.stepFile()
	return s.dispatch()
}

// stepFile is the step as the owner reads it.
func (s *step) stepFile() bus.StepFile {
	c := s.t.Call
	ws := c.Workspace
	if ws == "" {
		// A run without a repository: a call-private directory under the run's folder.
		ws = filepath.Join(s.b.cfg.Dir, "calls", c.ID)
	}
	f := bus.StepFile{Call: c.ID, K: s.t.K, Attempt: s.attempt, Op: bus.Op(c.ID, s.t.K), Marker: s.marker, Role: c.Role,
		AgentType: roles.AgentType(c.Role), Model: c.Pair.Model, ReasoningEffort: c.Pair.Effort, Workspace: ws,
		Packet: s.b.bus.PacketPath(c.ID, s.t.K, s.attempt)}
	if s.t.K > 1 && s.t.Thread.ID != "" {
		f.Action, f.AgentID = bus.ActionSendInput, s.t.Thread.ID
		f.Message = bus.SendInputMessage(s.marker, s.t.Prompt)
	} else {
		f.Action = bus.ActionSpawn
		f.Message = bus.SpawnMessage(s.marker, c.Role, ws, f.Packet)
	}
	return f
}

func (s *step) packet() string {
	task := s.t.Prompt
	if s.t.K > 1 && s.file.Action == bus.ActionSpawn && s.t.Task != "" {
		// A repair on a new subagent (its own was lost): the task once, the answer repaired and
		// the instruction, as the subagent has no conversation to repair in.
		task = s.t.RepairOnItsOwn()
	}
	return bus.Packet(bus.PacketInput{Marker: s.marker, Role: s.t.Call.Role, Workspace: s.file.Workspace, Env: s.b.cfg.Env,
		RunJSON: filepath.Join(s.b.cfg.Dir, "run.json"), Note: s.note, Conversation: s.conversation, Task: task, Schema: string(s.t.Call.Schema)})
}

// publish makes the step visible. A step that cannot be written (a full disk) was sent to
// nobody: it is written again at each poll and never ends the call. Its step_unwritten warning
// is written at the 1st, 10th, 100th, ... failure, and a closing one when it is written at last
// (or, from unwritten, when the turn ends), so a long outage costs a few rows, not one a poll.
func (s *step) publish(packet string) bool {
	err := mkdirWorkspace(s.file.Workspace)
	if err == nil {
		err = s.b.bus.Publish(s.file, packet)
	}
	now := time.Now().UTC()
	if err == nil {
		s.closeUnwritten(true)
		return true
	}
	s.failures++
	if s.failures == 1 {
		s.firstFailure = now
	}
	s.lastFailure, s.lastError = now, err.Error()
	if isPowerOf10(s.failures) {
		s.unwritten(nil)
	}
	return false
}

// closeUnwritten writes the closing step_unwritten row of a step that failed to be written:
// written once it is, not written when its turn ended first. Nothing when it never failed.
func (s *step) closeUnwritten(written bool) {
	if s.failures == 0 {
		return
	}
	s.unwritten(&written)
	s.failures = 0
}

// unwritten writes a step_unwritten flow row of the step.
func (s *step) unwritten(written *bool) {
	s.b.cfg.Report(pull.StepUnwritten{Call: s.t.Call.ID, Marker: s.marker, K: s.t.K, Attempt: s.attempt, Action: s.file.Action,
		Unwritten: journal.Unwritten{InputState: "not_delivered", Error: s.lastError, Failures: s.failures, FirstAt: s.firstFailure,
			LastAt: s.lastFailure, Written: written}})
}

func isPowerOf10(n int) bool {
	for n >= 10 && n%10 == 0 {
		n /= 10
	}
	return n == 1
}

// digest is the sha256 of a text, as rows record digests.
func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

// mkdirWorkspace makes sure a call's directory P is there: the placer made it when the run
// has a repository, else it is a call-private directory under the run's folder.
func mkdirWorkspace(dir string) error { return os.MkdirAll(dir, 0o700) }
