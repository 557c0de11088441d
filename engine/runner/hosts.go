package runner

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/engine/runner/effects"
	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// logged writes e's full account to the run's log and is e's detail naming that line.
func (r *runner) logged(e *errs.Error) string {
	if l := r.scriptLog.RunLog(); l != nil {
		store.LogError(l, e) // crw's own lines are few and small: they are kept past the bound
	}
	if e.Diagnostic.Log == "" {
		return fmt.Sprintf("%s (%s, %s; this process has no log to keep its account)", e.Detail, e.Code, e.Reason())
	}
	return fmt.Sprintf("%s (%s, %s; its account is in %s, on the line with correlationId %s)",
		e.Detail, e.Code, e.Reason(), e.Diagnostic.Log, e.Diagnostic.CorrelationID)
}

// Commit implements crw.Host: the run's effects make it (engine/runner/effects).
func (r *runner) Commit(node, message string) (json.RawMessage, error) {
	return r.fx.Commit(node, message)
}

// TierStep implements crw.Host: the run's effects make it (engine/runner/effects).
func (r *runner) TierStep(node, evidence string) (json.RawMessage, error) {
	return r.fx.TierStep(node, evidence)
}

// effectsHost is the runner as the effects see it.
type effectsHost struct{ r *runner }

var _ effects.Host = effectsHost{}

func (h effectsHost) Stopping() error                     { return context.Cause(h.r.ctx) }
func (h effectsHost) Stop(err error)                      { h.r.stop(err) }
func (h effectsHost) Append(rows ...*journal.Row) uint64  { return h.r.j.Append(rows...) }
func (h effectsHost) Sync(seq uint64) error               { return h.r.j.Sync(seq) }
func (h effectsHost) FlushSoon()                          { h.r.flushSoon() }
func (h effectsHost) Logged(e *errs.Error) string         { return h.r.logged(e) }
func (h effectsHost) ToldHolds(node string) []string      { return h.r.book.ToldHolds(node) }
func (h effectsHost) LeftAt() (uint64, bool)              { return h.r.replay.LeftAt() }
func (h effectsHost) OwedWriter(node string) *replay.Call { return h.r.replay.OwedWriter(node) }
func (h effectsHost) AskStep(id string)                   { h.r.book.AskStep(id) }

func (h effectsHost) Ended(call string) (effects.Ended, bool) {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	e := h.r.endedOf(call)
	if e == nil {
		return effects.Ended{}, false
	}
	return effects.Ended{Node: e.node, Role: e.role, Status: e.status}, true
}

// bookHost is the runner as its book of decisions sees it.
type bookHost struct{ r *runner }

var _ decisions.Host = bookHost{}

func (h bookHost) Stopped() error { return h.r.stopped() }
func (h bookHost) Stop(err error) { h.r.stop(err) }
func (h bookHost) FlushSoon()     { h.r.flushSoon() }
func (h bookHost) PublishSoon()   { h.r.progress.PublishSoon() }

func (h bookHost) Call(id string) (status journal.CallStatus, known bool) {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	if e := h.r.endedOf(id); e != nil {
		return e.status, true
	}
	return "", h.r.calls[id] != nil
}

// progressSource is the runner as its progress sees it.
type progressSource struct{ r *runner }

func (s progressSource) Snapshot() progress.Snapshot {
	r := s.r
	now := progress.Snapshot{Replaying: r.replay.Replaying(), LastSeq: r.j.LastSeq()}
	r.mu.Lock()
	defer r.mu.Unlock()
	now.InFlight, now.Tokens, now.Paused = len(r.inflight), r.spent, r.paused
	now.Decisions = r.book.Pending()
	return now
}
