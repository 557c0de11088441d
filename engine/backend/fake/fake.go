// Package fake is the deterministic, offline backend: answers come from an answers file, or
// are synthesized from the call's schema. It behaves like a host that outlives crw's process:
// a turn's answer depends only on the call and the turn, and its delay counts from when it was
// sent, so a resumed run finds a turn again and harvests what it was always going to answer.
package fake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
)

// Name is the backend's name in the journal.
const Name = "fake"

// HostLogEnv names a file the fake host appends a line to for every turn it receives (see
// Host): the crash tests, whose run processes die, count sends per turn from it.
const HostLogEnv = "CRW_FAKE_HOST_LOG"

// Descriptor registers the fake backend: its one option is the answers file.
func Descriptor() backend.Descriptor {
	return backend.Descriptor{
		Name:    Name,
		Summary: "deterministic and offline: answers from --answers, else synthesized from the schema",
		Options: []backend.Option{{Name: "answers", Usage: "the fake backend's answers file"}},
		Prepare: func(opts map[string]string) (map[string]string, error) {
			path := opts["answers"]
			if path == "" {
				return map[string]string{}, nil
			}
			abs, err := filepath.Abs(path)
			if err != nil {
				return nil, errs.Field(backend.OptionField("answers"), path, "%v", err)
			}
			if _, err := LoadAnswers(path); err != nil {
				return nil, answersError(path, err)
			}
			return map[string]string{"answers": abs}, nil
		},
		Open: func(cfg backend.Config) (backend.Backend, error) {
			var a *Answers
			if path := cfg.Options["answers"]; path != "" {
				var err error
				if a, err = LoadAnswers(path); err != nil {
					return nil, errs.New(errs.InvalidRequest, "the run's answers file: %v", err)
				}
			}
			return New(a, logOnlyHost(os.Getenv(HostLogEnv), cfg.Run)), nil
		},
	}
}

// answersError is the error of an answers file a run is created with: about the backend's
// option answers, naming the file and where in it the mistake is.
func answersError(path string, err error) error {
	var fe *FileError
	if errors.As(err, &fe) {
		problem := fe.Msg
		if fe.Field != "" {
			problem = fe.Field + ": " + fe.Msg
		}
		return errs.Field(backend.OptionField("answers"), fe.File, "%s", problem)
	}
	return errs.Field(backend.OptionField("answers"), path, "%v", err)
}

// Backend is the fake backend: the engine's side of the fake host.
type Backend struct {
	answers *Answers
	host    *Host
	now     func() time.Time
	overdue overdueGate
}

var _ backend.Backend = (*Backend)(nil)

// New returns a fake backend answering from answers (nil: every answer is synthesized) on
// host (nil: a host of its own, which counts nothing).
func New(answers *Answers, host *Host) *Backend {
	if host == nil {
		host = logOnlyHost("", "")
	}
	return &Backend{answers: answers, host: host, now: time.Now}
}

// Name implements backend.Backend.
func (b *Backend) Name() string { return Name }

// Close implements backend.Backend.
func (b *Backend) Close() error { return nil }

// Done implements backend.Backend: a fake thread holds nothing.
func (b *Backend) Done(backend.Call, backend.Thread) {}

// Run implements backend.Backend. A fake thread has no effect outside the process, so opening
// one needs no commit; the turn is sent once the intent is durable. A turn an earlier process
// sent is found on the host, which still has every turn ever sent: it is answered as it always
// was going to be, its delay counted from when it was sent.
func (b *Backend) Run(ctx context.Context, t backend.Turn, rec backend.Recorder) backend.Outcome {
	th := t.Thread
	if th.ID == "" {
		th = b.open(t.Call)
		rec.Thread(th)
	}
	if t.Sent != nil {
		turnID := t.Sent.TurnID
		if turnID == "" {
			// The process that sent it died before recording its id.
			turnID = turnIDOf(th, t.K)
			rec.Started(turnID)
		}
		return b.answer(ctx, t, rec, turnID, t.Sent.At, true)
	}
	if err := rec.Commit(); err != nil {
		return backend.Outcome{Status: backend.Unavailable, Cause: err}
	}
	turnID := turnIDOf(th, t.K)
	b.host.receive(turnID, t.Prompt)
	rec.Started(turnID)
	return b.answer(ctx, t, rec, turnID, b.now(), false)
}

// open makes a call's thread. A continuation's thread carries the conversation of the thread
// it resumes, which its id records; an attempt after the first has a thread of its own.
func (b *Backend) open(c backend.Call) backend.Thread {
	model, effort := c.Pair.Model, c.Pair.Effort
	if model == "" {
		model = "fake-model"
	}
	if effort == "" {
		effort = "medium"
	}
	id := "fake-" + c.ID
	if c.Attempt > 1 {
		id = fmt.Sprintf("%s-a%d", id, c.Attempt)
	}
	return backend.Thread{ID: id, Model: model, Effort: effort}
}

// queryOf is what an answers entry's match is checked against. The prompt is the call's task,
// so that a repair turn finds the entry its task turn did.
func queryOf(t backend.Turn) Query {
	task := t.Task
	if task == "" && t.K == 1 {
		task = t.Prompt
	}
	return Query{Call: t.Call.Index, NodeCall: t.Call.NodeCall, RoleCall: t.Call.RoleCall, Role: t.Call.Role, Node: t.Call.Node, Prompt: task}
}

func turnIDOf(th backend.Thread, k int) string { return fmt.Sprintf("%s-t%d", th.ID, k) }

func (b *Backend) answer(ctx context.Context, t backend.Turn, rec backend.Recorder, turnID string, sentAt time.Time, reconciled bool) backend.Outcome {
	out := backend.Outcome{TurnID: turnID}
	turn := b.answers.Find(queryOf(t), t.K)
	if reconciled {
		due := sentAt
		if turn != nil {
			due = sentAt.Add(time.Duration(turn.DelayMS) * time.Millisecond)
		}
		if !due.After(b.now().Add(overdueWindow)) && !b.overdue.wait(ctx, due) {
			out.Status = backend.Interrupted
			return out
		}
	}
	if turn != nil && turn.DelayMS > 0 {
		wait := time.Until(sentAt.Add(time.Duration(turn.DelayMS) * time.Millisecond))
		if wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				out.Status = backend.Interrupted
				return out
			}
		}
	} else if ctx.Err() != nil {
		out.Status = backend.Interrupted
		return out
	}
	out.Status = backend.Answered
	if turn != nil && (turn.Files != nil || turn.Commit) {
		if err := writeFiles(ctx, t.Call.Workspace, turn); err != nil {
			// The host could not do what the turn says: a configuration the run cannot serve.
			out.Status, out.Failure = backend.Failed, &backend.Failure{End: backend.EndRefused, Reason: "host_config_workspace",
				Detail: "the fake turn's files could not be written: " + err.Error()}
			return out
		}
	}
	switch {
	case turn == nil:
		text, err := synthesize(t)
		if err != nil {
			rec.Warn("answer_not_synthesized", err.Error())
		}
		out.Text = text
	case turn.Lost:
		out.Status = backend.Lost
		return out
	case turn.Error != nil:
		info := *turn.Error
		if info == "none" {
			info = ""
		}
		out.Status, out.Failure = backend.Failed, codex.Classify(info)
	case turn.Text != nil:
		out.Text = *turn.Text
	default:
		out.Text = string(turn.JSON)
	}
	if turn != nil && turn.Tokens != nil {
		tc := turn.Tokens
		out.Tokens = journal.Tokens{Input: tc.Input, CachedInput: tc.CachedInput, Output: tc.Output, ReasoningOutput: tc.ReasoningOutput, Total: tc.Input + tc.Output}
	} else if out.Status != backend.Failed {
		out.Tokens = estimate(t.Prompt, out.Text)
	}
	return out
}

// synthesize answers a call nobody scripted: a valid instance of its schema, or "ok".
// A schema no instance can be built for gets "{}", which fails validation as a model's
// answer would: the engine's repair and null_model handle it, and the error says why.
func synthesize(t backend.Turn) (string, error) {
	if t.Call.Schema == nil {
		return "ok", nil
	}
	doc, err := schema.Synthesize(t.Call.Schema)
	if err != nil {
		return "{}", err
	}
	return string(doc), nil
}

// estimate counts about four characters a token, as the usual tokenizers do for English.
func estimate(prompt, answer string) journal.Tokens {
	in := int64(len(prompt)+3) / 4
	out := int64(len(answer)+3) / 4
	return journal.Tokens{Input: in, Output: out, Total: in + out}
}

// overdueGate releases turns that finished on the host while no process watched them in the
// order they finished: turns reconciled together after a restart would otherwise come back in
// whatever order their goroutines run, and a Promise.race could take another path than it
// would have.
type overdueGate struct {
	mu      sync.Mutex
	pending []time.Time
	changed chan struct{}
}

// overdueWindow is how long a reconciled turn waits for the others reconciled with it.
const overdueWindow = 20 * time.Millisecond

// overdueSpacing leaves the engine time to deliver one before the next is released.
const overdueSpacing = 2 * time.Millisecond

// wait returns once every overdue turn that finished before due has been released; false when
// ctx ended first.
func (g *overdueGate) wait(ctx context.Context, due time.Time) bool {
	g.mu.Lock()
	g.pending = append(g.pending, due)
	if g.changed == nil {
		g.changed = make(chan struct{})
	}
	g.mu.Unlock()
	release := func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		for i, d := range g.pending {
			if d.Equal(due) {
				g.pending = append(g.pending[:i], g.pending[i+1:]...)
				break
			}
		}
		close(g.changed)
		g.changed = make(chan struct{})
	}
	t := time.NewTimer(overdueWindow)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		release()
		return false
	}
	for {
		g.mu.Lock()
		first := true
		for _, d := range g.pending {
			if d.Before(due) {
				first = false
				break
			}
		}
		changed := g.changed
		g.mu.Unlock()
		if first {
			// The later ones wait a little longer, so this one reaches the engine first.
			time.AfterFunc(overdueSpacing, release)
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			release()
			return false
		}
	}
}
