// Package fake is the deterministic, offline backend: answers come from an answers file, or
// are synthesized from the call's schema. It behaves like a host that outlives crw's process:
// a turn's answer depends only on the call and the turn, and its delay counts from when it was
// sent, so a resumed run finds a turn again and harvests what it was always going to answer.
package fake

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/journal"
)

// Name is the backend's name in the journal.
const Name = "fake"

// Backend is the fake host.
type Backend struct {
	answers *Answers
	now     func() time.Time
	overdue overdueGate
}

var _ backend.Backend = (*Backend)(nil)

// New returns a fake host answering from answers (nil: every answer is synthesized).
func New(answers *Answers) *Backend {
	return &Backend{answers: answers, now: time.Now}
}

// Name implements backend.Backend.
func (b *Backend) Name() string { return Name }

// Close implements backend.Backend.
func (b *Backend) Close() error { return nil }

// OpenThread implements backend.Backend. A fake thread has no effect outside the process, so
// it needs no commit. A continuation's thread carries the conversation of the thread it
// resumes, which its id records.
func (b *Backend) OpenThread(_ context.Context, req backend.ThreadRequest, _ func() error) (backend.Thread, error) {
	model, effort := req.Call.Pair.Model, req.Call.Pair.Effort
	if model == "" {
		model = "fake-model"
	}
	if effort == "" {
		effort = "medium"
	}
	return backend.Thread{ID: "fake-" + req.Call.ID, Model: model, Effort: effort}, nil
}

// Send implements backend.Backend: the turn is sent once the intent is durable.
func (b *Backend) Send(_ context.Context, th backend.Thread, req backend.TurnRequest, commit func() error) (string, error) {
	if err := commit(); err != nil {
		return "", err
	}
	return turnIDOf(th, req.K), nil
}

// Wait implements backend.Backend.
func (b *Backend) Wait(ctx context.Context, th backend.Thread, req backend.TurnRequest, turnID string) backend.Outcome {
	return b.answer(ctx, req, turnID, b.now(), false)
}

// Reconcile implements backend.Backend: the fake host still has every turn ever sent.
func (b *Backend) Reconcile(ctx context.Context, th backend.Thread, req backend.TurnRequest, turnID string, sentAt time.Time) backend.Outcome {
	if turnID == "" {
		turnID = turnIDOf(th, req.K) // the process that sent it died before recording it
	}
	return b.answer(ctx, req, turnID, sentAt, true)
}

func turnIDOf(th backend.Thread, k int) string { return fmt.Sprintf("%s-t%d", th.ID, k) }

func (b *Backend) answer(ctx context.Context, req backend.TurnRequest, turnID string, sentAt time.Time, reconciled bool) backend.Outcome {
	out := backend.Outcome{TurnID: turnID}
	turn := b.answers.Find(req.Call.Index, req.Call.Role, req.Call.Node, req.K)
	if reconciled {
		due := sentAt
		if turn != nil {
			due = sentAt.Add(time.Duration(turn.DelayMS) * time.Millisecond)
		}
		if !due.After(b.now().Add(overdueWindow)) && !b.overdue.wait(ctx, due) {
			out.Interrupted = true
			return out
		}
	}
	if turn != nil && turn.DelayMS > 0 {
		wait := time.Until(sentAt.Add(time.Duration(turn.DelayMS) * time.Millisecond))
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				out.Interrupted = true
				return out
			}
		}
	} else if ctx.Err() != nil {
		out.Interrupted = true
		return out
	}
	switch {
	case turn == nil:
		out.Text = synthesize(req)
	case turn.Lost:
		out.Lost = true
		return out
	case turn.Error != nil:
		out.Failed = true
		if *turn.Error != "none" {
			out.ErrorInfo = *turn.Error
		}
	case turn.Text != nil:
		out.Text = *turn.Text
	default:
		out.Text = string(turn.JSON)
	}
	if turn != nil && turn.Tokens != nil {
		t := turn.Tokens
		out.Tokens = journal.Tokens{Input: t.Input, CachedInput: t.CachedInput, Output: t.Output, ReasoningOutput: t.ReasoningOutput, Total: t.Input + t.Output}
	} else if !out.Failed {
		out.Tokens = estimate(req.Prompt, out.Text)
	}
	return out
}

// synthesize answers a call nobody scripted: a valid instance of its schema, or "ok".
func synthesize(req backend.TurnRequest) string {
	if req.Call.Schema == nil {
		return "ok"
	}
	doc, err := schema.Synthesize(req.Call.Schema)
	if err != nil {
		// A schema no instance can be built for gets an answer that fails validation, as a
		// model's would; the engine's repair and null_model handle it.
		return "{}"
	}
	return string(doc)
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
