package session_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/sessiontest"
	"github.com/crw-dev/crw/engine/backend/session/wake"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

// clock is a wake clock the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// flowRows collects the rows a backend records that belong to no call.
type flowRows struct {
	mu   sync.Mutex
	rows []journal.Row
}

func (f *flowRows) add(e backend.Event) {
	r := e.Row()
	f.mu.Lock()
	f.rows = append(f.rows, *r)
	f.mu.Unlock()
}
func (f *flowRows) all() []journal.Row {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]journal.Row(nil), f.rows...)
}

// wakeRun runs a one-call session run whose owner never takes the step, with the wake clock c;
// it returns the host, the recorded rows, and a function that waits until n rows are in.
func wakeRun(t *testing.T, c *clock, tune func(*session.Config)) (*sessiontest.Host, *flowRows, func(n int) []journal.Row) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`
import { agent } from "crw:agent";
export default async function main() { return (await agent.call({ role: "explorer", prompt: "wait" })).status; }
`), 0o600))
	svc := enginetest.Service(mem.New())
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	host := sessiontest.NewHost(owner)
	rows := &flowRows{}
	cfg := session.Config{Run: id, Owner: owner, Host: host, Dir: filepath.Join(dir, "run"), Poll: 2 * time.Millisecond,
		Report: rows.add, Wake: wake.Config{Now: c.Now}}
	if tune != nil {
		tune(&cfg)
	}
	b := session.New(cfg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = svc.Execute(ctx, id, engine.ExecOptions{Backend: b})
	}()
	t.Cleanup(func() { cancel(); <-done; b.Close() })
	wait := func(n int) []journal.Row {
		t.Helper()
		require.Eventually(t, func() bool { return len(rows.all()) >= n }, time.Minute, time.Millisecond, "%d rows: %+v", n, rows.all())
		time.Sleep(20 * time.Millisecond) // no row more than that
		got := rows.all()
		require.Len(t, got, n, "%+v", got)
		return got
	}
	return host, rows, wait
}

// TestSessionWakesTheOwner: a step published while the owner is idle wakes it at once with a
// turn that names the step and the command; while the step waits without a report the owner is
// woken again after 15 minutes, then after 30, then every hour; after two hours of waiting the
// session_unresponsive escalation is written once, and the run goes on waiting.
func TestSessionWakesTheOwner(t *testing.T) {
	c := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	host, _, wait := wakeRun(t, c, nil)
	rows := wait(1)
	w := rows[0]
	assert.Equal(t, journal.TypeSessionWake, w.Type)
	assert.Equal(t, []string{"c1/t1"}, w.Ops)
	assert.Equal(t, owner, w.Owner)
	assert.Equal(t, "idle", w.OwnerStatus)
	assert.Equal(t, w.Batch, w.WakeID, "the first process's wake id is its batch")
	assert.Regexp(t, `^b[0-9a-f]{16}$`, w.Batch)
	require.NotNil(t, w.Staged)
	assert.True(t, *w.Staged)
	assert.Zero(t, w.Renotify)
	require.Len(t, host.Wakes(), 1)
	assert.Contains(t, host.Wakes()[0], owner+": crw run ")
	assert.Contains(t, host.Wakes()[0], "1 step(s) wait for you (c1/t1-a1)")
	assert.Contains(t, host.Wakes()[0], "crw flow next ")

	c.add(14 * time.Minute)
	wait(1)
	c.add(time.Minute) // 15 min
	rows = wait(2)
	assert.Equal(t, 1, rows[1].Renotify)
	assert.Equal(t, int64(900), rows[1].WaitingSeconds)
	assert.Equal(t, w.WakeID, rows[1].WakeID, "the same steps: the same logical id")
	c.add(29 * time.Minute) // 44 min
	wait(2)
	c.add(time.Minute) // 45 min: 30 after the last
	rows = wait(3)
	assert.Equal(t, 2, rows[2].Renotify)
	c.add(60 * time.Minute) // 105 min: an hour after the last, the longest interval
	rows = wait(4)
	assert.Equal(t, 3, rows[3].Renotify)
	c.add(15 * time.Minute) // 120 min: the escalation
	rows = wait(5)
	e := rows[4]
	assert.Equal(t, journal.TypeEscalation, e.Type)
	assert.Equal(t, "session_unresponsive", e.Reason)
	assert.Equal(t, []string{"c1/t1"}, e.Ops)
	assert.Equal(t, int64(7200), e.WaitingSeconds)
	c.add(45 * time.Minute) // 165 min: the next renotification, and no second escalation
	rows = wait(6)
	assert.Equal(t, journal.TypeSessionWake, rows[5].Type)
	assert.Equal(t, 4, rows[5].Renotify)
	assert.Len(t, host.Wakes(), 5)
}

// TestSessionWakeRecordsItsTurnAndItsEnd: a wake names the turn it started on the owner's
// thread, and once that turn ends a session_wake_ended row says how, so a user sees whether the
// wake reached the owner; a turn still running writes nothing.
func TestSessionWakeRecordsItsTurnAndItsEnd(t *testing.T) {
	c := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	host, _, wait := wakeRun(t, c, nil)
	rows := wait(1)
	first := rows[0]
	assert.Equal(t, "wake-1", first.TurnID)
	host.EndWakes("completed")
	rows = wait(2)
	ended := rows[1]
	assert.Equal(t, journal.TypeSessionWakeEnded, ended.Type)
	assert.Equal(t, first.WakeID, ended.WakeID)
	assert.Equal(t, "wake-1", ended.TurnID)
	assert.Equal(t, "completed", ended.TurnStatus)
	assert.Equal(t, owner, ended.Owner)

	c.add(15 * time.Minute) // the renotification: a turn of its own
	rows = wait(3)
	assert.Equal(t, 1, rows[2].Renotify)
	assert.Equal(t, "wake-2", rows[2].TurnID)
	host.EndWakes("interrupted")
	rows = wait(4)
	assert.Equal(t, journal.TypeSessionWakeEnded, rows[3].Type)
	assert.Equal(t, "wake-2", rows[3].TurnID)
	assert.Equal(t, "interrupted", rows[3].TurnStatus)
}

// TestSessionWakesABusyOwnerAfterItsTurn: an owner in a turn is woken once it is idle again.
func TestSessionWakesABusyOwnerAfterItsTurn(t *testing.T) {
	c := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var host *sessiontest.Host
	host, _, wait := wakeRun(t, c, func(cfg *session.Config) {
		cfg.Host.(*sessiontest.Host).SetOwnerState(owner, "active")
	})
	wait(0)
	assert.Empty(t, host.Wakes(), "no turn is started on an owner in a turn")
	host.SetOwnerState(owner, "notLoaded")
	rows := wait(1)
	assert.Equal(t, "notLoaded", rows[0].OwnerStatus)
	assert.True(t, *rows[0].Staged)
	assert.Len(t, host.Wakes(), 1)
}

// TestSessionWakeIsNotStagedWithoutTheOwnersHost: through a private app server the run never
// starts a turn on the owner's thread: its wake row says staged: false and why; a later process
// wakes under ids of its own; a wake the host refuses says so.
func TestSessionWakeIsNotStagedWithoutTheOwnersHost(t *testing.T) {
	c := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	host, _, wait := wakeRun(t, c, func(cfg *session.Config) { cfg.PrivateHost, cfg.Process = true, 3 })
	rows := wait(1)
	require.NotNil(t, rows[0].Staged)
	assert.False(t, *rows[0].Staged)
	assert.Equal(t, "no_owner_host", rows[0].Reason)
	assert.Equal(t, rows[0].Batch+"/e3", rows[0].WakeID)
	assert.Empty(t, host.Wakes())

	c2 := &clock{now: c.now}
	_, _, wait2 := wakeRun(t, c2, func(cfg *session.Config) { cfg.Host.(*sessiontest.Host).WakeErr = assert.AnError })
	rows = wait2(1)
	assert.False(t, *rows[0].Staged)
	assert.Equal(t, "wake_failed", rows[0].Reason)
}

// TestSessionDoesNotWakeAWatchingOwner: an owner that read crw flow next within the last
// minute watches the run and is not woken; a minute after its last read it is.
func TestSessionDoesNotWakeAWatchingOwner(t *testing.T) {
	c := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	host, _, wait := wakeRun(t, c, func(cfg *session.Config) {
		require.NoError(t, os.MkdirAll(cfg.Dir, 0o700))
		seen := filepath.Join(cfg.Dir, wake.SeenFile)
		require.NoError(t, os.WriteFile(seen, nil, 0o600))
		require.NoError(t, os.Chtimes(seen, c.Now(), c.Now())) // read just now
	})
	wait(0)
	c.add(59 * time.Second)
	wait(0)
	assert.Empty(t, host.Wakes())
	c.add(2 * time.Second)
	rows := wait(1)
	assert.Equal(t, journal.TypeSessionWake, rows[0].Type)
	assert.Zero(t, rows[0].Renotify, "the step's first wake, come once the owner stopped watching")
	assert.Len(t, host.Wakes(), 1)
}

// countingClock is a wake clock the test moves and whose reads it counts: each poll of the run
// reads it once, so a test can wait for polls, not for time.
type countingClock struct {
	clock
	reads atomic.Int64
}

func (c *countingClock) Now() time.Time { c.reads.Add(1); return c.clock.Now() }

// waitReads waits until the clock has been read n more times than when it was called.
func (c *countingClock) waitReads(t *testing.T, n int64) {
	t.Helper()
	from := c.reads.Load()
	require.Eventually(t, func() bool { return c.reads.Load() >= from+n }, time.Minute, time.Millisecond)
}

// TestSessionDoesNotWakeForABoundStep: once the owner's subagent is bound to the step, the step
// waits for that subagent, not for the owner: hours of its turn wake no one and write no
// session_unresponsive escalation; the run completes when the turn does.
func TestSessionDoesNotWakeForABoundStep(t *testing.T) {
	c := &countingClock{clock: clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`
import { agent } from "crw:agent";
export default async function main() { return (await agent.call({ role: "explorer", prompt: "a long look" })).output; }
`), 0o600))
	svc := enginetest.Service(mem.New())
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	host := sessiontest.NewHost(owner)
	host.RolloutDir = t.TempDir()
	runDir := filepath.Join(dir, "run")
	require.NoError(t, os.Mkdir(runDir, 0o700))
	flow := &flowRows{}
	b := session.New(session.Config{Run: id, Owner: owner, Host: host, Dir: runDir, Poll: 2 * time.Millisecond, LookupEvery: 4,
		Report: flow.add, Wake: wake.Config{Now: c.Now}})
	defer b.Close()
	o := &sessiontest.Owner{Host: host, Bus: bus.Bus{Dir: runDir}, Run: id,
		Answer: func(bus.StepFile) sessiontest.Answer { return sessiontest.Answer{Hold: true} }}
	ownerCtx, stopOwner := context.WithCancel(ctx)
	defer stopOwner()
	go o.Loop(ownerCtx)
	type ended struct {
		st  *store.Status
		err error
	}
	done := make(chan ended, 1)
	go func() {
		st, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: b})
		done <- ended{st, err}
	}()

	var thread, turn string
	require.Eventually(t, func() bool {
		rows, _ := svc.Rows(ctx, id)
		for _, r := range rows {
			switch r.Type {
			case journal.TypeThreadStarted:
				thread = r.ThreadID
			case journal.TypeTurnStarted:
				turn = r.TurnID
			}
		}
		return thread != "" && turn != ""
	}, time.Minute, time.Millisecond, "the owner's subagent is bound")
	c.waitReads(t, 3)
	before := len(flow.all())
	c.add(3 * time.Hour) // past every renotification interval and the escalation's two hours
	c.waitReads(t, 5)
	for _, r := range flow.all()[before:] {
		t.Errorf("a bound step wrote %s %s (renotify %d): %s", r.Type, r.Reason, r.Renotify, r.Detail)
	}

	host.End(thread, turn, "seen", "")
	got := <-done
	require.NoError(t, got.err)
	require.Equal(t, store.RunCompleted, got.st.Status, "%+v", got.st.Error)
	assert.JSONEq(t, `"seen"`, string(got.st.Result))
}
