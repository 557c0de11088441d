// Package wake is how a session run wakes its owner while steps wait for it: a turn on the
// owner's thread when a step it was not told of waits (after the turn it is in, when it is busy),
// a renotification at growing intervals, the one session_unresponsive escalation, and the end of
// each wake's turn followed; none while the owner watches the run through crw flow next.
package wake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/pull"
	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/host"
)

// Config times the wakes of the owner while steps wait for it.
type Config struct {
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

// Defaults sets what the configuration leaves unset to its default.
func (c *Config) Defaults() {
	if c.After <= 0 {
		c.After = 15 * time.Minute
	}
	if c.RenotifyMax <= 0 {
		c.RenotifyMax = time.Hour
	}
	if c.UnresponsiveAfter <= 0 {
		c.UnresponsiveAfter = 2 * time.Hour
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Watching <= 0 {
		c.Watching = time.Minute
	}
}

// Owner is the owner a run's process wakes, and what its wakes need of the run.
type Owner struct {
	Run    string
	Thread string // the owner thread
	Dir    string // the run's folder, where crw flow next touches SeenFile
	// Host wakes the owner when it is a host.Waker and not a private app server.
	Host        host.Host
	PrivateHost bool
	// Process is this process's place among the run's processes: the wake ids of a later
	// process are its own.
	Process int
	// Report journals an event of the run that belongs to no call's turn.
	Report func(backend.Event)
}

// Wakes is the owner's wake state in one process of a run: what waits since when, and what it
// was told. One goroutine looks at it.
type Wakes struct {
	owner Owner
	cfg   Config

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

// New is the wakes of owner, timed by cfg (its defaults set).
func New(owner Owner, cfg Config) *Wakes { return &Wakes{owner: owner, cfg: cfg} }

// wakeTurn is a turn a wake started on the owner's thread.
type wakeTurn struct{ wakeID, turnID string }

// maxDelivering bounds the wake turns followed at once: an owner that never ends its turns
// must not grow a process's memory.
const maxDelivering = 16

// watching tells whether crw flow next read the run within the Watching window.
func (w *Wakes) watching(now time.Time) bool {
	if w.owner.Dir == "" {
		return false
	}
	fi, err := os.Stat(filepath.Join(w.owner.Dir, SeenFile))
	return err == nil && now.Sub(fi.ModTime()) < w.cfg.Watching
}

// Look is one look at the steps waiting (waiting gives their markers, sorted): a wake when a
// step the owner was not told of waits and the owner is idle or not loaded (after its turn when
// it is busy), a renotification when the steps have waited an interval since the last wake, an
// escalation once they have waited UnresponsiveAfter.
func (w *Wakes) Look(ctx context.Context, waiting func() []string) {
	cfg := w.cfg
	if cfg.Off {
		return
	}
	markers := waiting()
	now := cfg.Now()
	if len(markers) == 0 {
		*w = Wakes{owner: w.owner, cfg: w.cfg, delivering: w.delivering}
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
		w.owner.Report(pull.Escalation{Reason: "session_unresponsive", Owner: w.owner.Thread,
			Ops: ops(markers), Batch: batchOf(markers), WaitingSeconds: int64(waited / time.Second),
			Detail: fmt.Sprintf("steps have waited %s without a report from the owner; the run goes on waiting", waited.Round(time.Second))})
	}
	renotify := !fresh && !w.last.IsZero() && now.Sub(w.last) >= w.interval
	if !fresh && !renotify {
		return
	}
	if w.watching(now) {
		return // the owner reads crw flow next: it sees the steps without a wake
	}
	status := ""
	waker, canWake := w.owner.Host.(host.Waker)
	if canWake && !w.owner.PrivateHost {
		var err error
		if status, err = waker.OwnerStatus(ctx, w.owner.Thread); err != nil {
			status = "unknown"
		}
		if fresh && status == "active" {
			return // woken after the turn it is in: the steps stay fresh until then
		}
	}
	row := w.row(markers, status, waited)
	if renotify {
		w.renotify++
		row.Renotify = w.renotify
		w.interval = min(2*w.interval, cfg.RenotifyMax)
	}
	if !w.deliver(ctx, waker, canWake, row, markers) {
		return
	}
	for _, m := range markers {
		w.woken[m] = true
	}
	w.last = now
}

// row is the wake of markers.
func (w *Wakes) row(markers []string, status string, waited time.Duration) *pull.Wake {
	row := &pull.Wake{Batch: batchOf(markers), Ops: ops(markers), Owner: w.owner.Thread, OwnerStatus: status,
		WaitingSeconds: int64(waited / time.Second)}
	row.WakeID = row.Batch
	if w.owner.Process > 1 {
		row.WakeID += fmt.Sprintf("/e%d", w.owner.Process)
	}
	return row
}

// deliver wakes the owner with a turn on its thread when the host can start one, and writes
// the wake's row: staged when the turn started. It is false when the wake was cut short by this
// process's own end: nothing failed, no row is written, and a resume wakes again.
func (w *Wakes) deliver(ctx context.Context, waker host.Waker, canWake bool, row *pull.Wake, markers []string) bool {
	switch {
	case !canWake || w.owner.PrivateHost:
		row.Reason = "no_owner_host"
		row.Detail = "the run reads the owner's subagents through a private app server, which never starts turns on the owner's thread: the owner polls crw flow next"
	default:
		turn, err := waker.Wake(ctx, w.owner.Thread, wakeText(w.owner.Run, markers))
		if err != nil {
			if ctx.Err() != nil {
				return false
			}
			row.Reason, row.Detail = "wake_failed", err.Error()
		} else {
			row.Staged, row.TurnID = true, turn
			if turn != "" {
				if len(w.delivering) == maxDelivering {
					w.delivering = w.delivering[1:]
				}
				w.delivering = append(w.delivering, wakeTurn{wakeID: row.WakeID, turnID: turn})
			}
		}
	}
	w.owner.Report(*row)
	return true
}

// Follow reads the turns wakes started on the owner's thread and writes a
// session_wake_ended row for each that ended, so a user sees whether a wake reached the owner.
// A turn the host cannot be asked about yet is asked again at the next look.
func (w *Wakes) Follow(ctx context.Context) {
	waker, ok := w.owner.Host.(host.Waker)
	if !ok || len(w.delivering) == 0 {
		return
	}
	left := w.delivering[:0]
	for _, d := range w.delivering {
		status, err := waker.WakeTurn(ctx, w.owner.Thread, d.turnID)
		switch {
		case err != nil || status == "" || status == "inProgress":
			left = append(left, d)
		default:
			w.owner.Report(pull.WakeEnded{WakeID: d.wakeID, TurnID: d.turnID, TurnStatus: status, Owner: w.owner.Thread})
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
