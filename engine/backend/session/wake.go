package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/host"
	"github.com/crw-dev/crw/journal"
)

// WakeConfig times the wakes of the owner while steps wait for it.
type WakeConfig struct {
	// After is how long steps wait without a report before the owner is woken again (default
	// 15 minutes); each interval is twice the one before, up to RenotifyMax (default an hour).
	After, RenotifyMax time.Duration
	// UnresponsiveAfter is how long steps wait before the one session_unresponsive escalation
	// (default 2 hours); the run goes on waiting.
	UnresponsiveAfter time.Duration
	// Now is the wakes' clock (default time.Now).
	Now func() time.Time
	// Off: the owner is never woken (it polls crw flow next).
	Off bool
	// Watching is how recently crw flow next must have read the run for its owner to count as
	// watching it: a watching owner is not woken, it sees the steps itself (default a minute: an
	// owner that alternates wait_agent (30 s) with crw flow next --wait 30s reads it more often).
	Watching time.Duration
}

// SeenFile is the file in the run's folder crw flow next touches each time it reads the run:
// the owner is watching.
const SeenFile = "next.seen"

func (w *WakeConfig) defaults() {
	if w.After <= 0 {
		w.After = 15 * time.Minute
	}
	if w.RenotifyMax <= 0 {
		w.RenotifyMax = time.Hour
	}
	if w.UnresponsiveAfter <= 0 {
		w.UnresponsiveAfter = 2 * time.Hour
	}
	if w.Now == nil {
		w.Now = time.Now
	}
	if w.Watching <= 0 {
		w.Watching = time.Minute
	}
}

// watching tells whether crw flow next read the run within the Watching window.
func (b *Backend) watching(now time.Time) bool {
	if b.cfg.Dir == "" {
		return false
	}
	fi, err := os.Stat(filepath.Join(b.cfg.Dir, SeenFile))
	return err == nil && now.Sub(fi.ModTime()) < b.cfg.Wake.Watching
}

// wakes is the owner's wake state: what waits since when, and what it was told.
type wakes struct {
	since     time.Time       // when the steps now waiting began to wait
	woken     map[string]bool // the markers a wake has named
	last      time.Time       // the last wake
	interval  time.Duration   // until the next renotification
	renotify  int
	escalated bool
	// delivering are the wakes whose turns on the owner's thread have not been seen to end,
	// oldest first; they outlive the waiting steps that caused them.
	delivering []wakeTurn
}

// wakeTurn is a turn a wake started on the owner's thread.
type wakeTurn struct{ wakeID, turnID string }

// maxDelivering bounds the wake turns followed at once: an owner that never ends its turns
// must not grow a process's memory.
const maxDelivering = 16

// waitingMarkers are the markers of the steps waiting for the owner, sorted: a step whose
// subagent is bound waits for that subagent's answer, not for the owner, and wakes no one.
func (b *Backend) waitingMarkers() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.waiting))
	for m := range b.waiting {
		if _, bound := b.bound[m]; !bound {
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

// wakeOwner is one look at the waiting steps: a wake when a step the owner was not told of
// waits and the owner is idle or not loaded (after its turn when it is busy), a renotification
// when the steps have waited an interval since the last wake, an escalation once they have
// waited UnresponsiveAfter.
func (b *Backend) wakeOwner(ctx context.Context, w *wakes) {
	cfg := b.cfg.Wake
	if cfg.Off {
		return
	}
	markers := b.waitingMarkers()
	now := cfg.Now()
	if len(markers) == 0 {
		*w = wakes{delivering: w.delivering}
		return
	}
	if w.since.IsZero() {
		w.since, w.woken, w.interval = now, map[string]bool{}, cfg.After
	}
	fresh := false
	for _, m := range markers {
		fresh = fresh || !w.woken[m]
	}
	waited := now.Sub(w.since)
	if !w.escalated && waited >= cfg.UnresponsiveAfter {
		w.escalated = true
		b.cfg.Flow(&journal.Row{Type: journal.TypeEscalation, Reason: "session_unresponsive", Owner: b.cfg.Owner,
			Ops: ops(markers), Batch: batchOf(markers), WaitingSeconds: int64(waited / time.Second),
			Detail: fmt.Sprintf("steps have waited %s without a report from the owner; the run goes on waiting", waited.Round(time.Second))})
	}
	renotify := !fresh && !w.last.IsZero() && now.Sub(w.last) >= w.interval
	if !fresh && !renotify {
		return
	}
	if b.watching(now) {
		return // the owner reads crw flow next: it sees the steps without a wake
	}
	status := ""
	waker, canWake := b.cfg.Host.(host.Waker)
	if canWake && !b.cfg.PrivateHost {
		var err error
		if status, err = waker.OwnerStatus(ctx, b.cfg.Owner); err != nil {
			status = "unknown"
		}
		if fresh && status == "active" {
			return // woken after the turn it is in: the steps stay fresh until then
		}
	}
	row := &journal.Row{Type: journal.TypeSessionWake, Batch: batchOf(markers), Ops: ops(markers), Owner: b.cfg.Owner, OwnerStatus: status,
		WaitingSeconds: int64(waited / time.Second)}
	row.WakeID = row.Batch
	if b.cfg.Process > 1 {
		row.WakeID += fmt.Sprintf("/e%d", b.cfg.Process)
	}
	if renotify {
		w.renotify++
		row.Renotify = w.renotify
		w.interval = min(2*w.interval, cfg.RenotifyMax)
	}
	staged := false
	switch {
	case !canWake || b.cfg.PrivateHost:
		row.Reason = "no_owner_host"
		row.Detail = "the run reads the owner's subagents through a private app server, which never starts turns on the owner's thread: the owner polls crw flow next"
	default:
		turn, err := waker.Wake(ctx, b.cfg.Owner, wakeText(b.cfg.Run, markers))
		if err != nil {
			if ctx.Err() != nil {
				return // cut short by this process's own end: nothing failed, and a resume wakes again
			}
			row.Reason, row.Detail = "wake_failed", err.Error()
		} else {
			staged, row.TurnID = true, turn
			if turn != "" {
				if len(w.delivering) == maxDelivering {
					w.delivering = w.delivering[1:]
				}
				w.delivering = append(w.delivering, wakeTurn{wakeID: row.WakeID, turnID: turn})
			}
		}
	}
	row.Staged = &staged
	b.cfg.Flow(row)
	for _, m := range markers {
		w.woken[m] = true
	}
	w.last = now
}

// followWakes reads the turns wakes started on the owner's thread and writes a
// session_wake_ended row for each that ended, so a user sees whether a wake reached the owner.
// A turn the host cannot be asked about yet is asked again at the next look.
func (b *Backend) followWakes(ctx context.Context, w *wakes) {
	waker, ok := b.cfg.Host.(host.Waker)
	if !ok || len(w.delivering) == 0 {
		return
	}
	left := w.delivering[:0]
	for _, d := range w.delivering {
		status, err := waker.WakeTurn(ctx, b.cfg.Owner, d.turnID)
		switch {
		case err != nil || status == "" || status == "inProgress":
			left = append(left, d)
		default:
			b.cfg.Flow(&journal.Row{Type: journal.TypeSessionWakeEnded, WakeID: d.wakeID, TurnID: d.turnID, TurnStatus: status, Owner: b.cfg.Owner})
		}
	}
	w.delivering = left
}

// wakeText is the owner's wake message: which steps wait, and the command to run.
func wakeText(run string, markers []string) string {
	return fmt.Sprintf("crw run %s: %d step(s) wait for you (%s). Run `crw flow next %s --json`, make each step's host_call and run its then command; "+
		"then alternate wait_agent with `crw flow next %s --wait 30s` until the run ends.", run, len(markers), strings.Join(markers, ", "), run, run)
}

// batchOf names a set of waiting steps.
func batchOf(markers []string) string {
	h := sha256.Sum256([]byte(strings.Join(markers, "\n")))
	return "b" + hex.EncodeToString(h[:8])
}

func ops(markers []string) []string {
	out := make([]string, 0, len(markers))
	for _, m := range markers {
		if call, k, _, ok := bus.ParseMarker(m); ok {
			out = append(out, bus.Op(call, k))
		}
	}
	return out
}
