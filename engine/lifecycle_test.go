package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/timeline"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

// scriptedLauncher stands for a run process: it does to the store what the test says, then
// exits.
type scriptedLauncher struct {
	st  *mem.Store
	act func(store.Lease)
}

type exited struct{ done chan struct{} }

func (p *exited) Pid() int                { return 4242 }
func (p *exited) Exited() <-chan struct{} { return p.done }
func (p *exited) Log() string             { return "/runs/process.log" }

func (l *scriptedLauncher) Launch(run string, env map[string]string) (engine.Process, error) {
	p := &exited{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		if l.act == nil {
			return // it dies before it takes the run
		}
		lease, err := l.st.Acquire(context.Background(), run)
		if err != nil {
			return
		}
		l.act(lease)
		lease.Release()
	}()
	return p, nil
}

// TestStartSaysHowItsProcessEnded: a detached start reports what became of the run's process
// when it exited before the run went on: it ran to the end, it stopped with an error it
// published, it died while it ran, or it died before it held the run.
func TestStartSaysHowItsProcessEnded(t *testing.T) {
	t.Parallel()
	publish := func(st store.State, e *journal.RunError) func(store.Lease) {
		return func(l store.Lease) {
			l.Publish(&store.Status{Run: l.Run(), State: st, PID: 4242, Error: e, Replaying: true, Result: json.RawMessage("null")})
		}
	}
	tests := []struct {
		name       string
		act        func(store.Lease)
		ok         bool
		code       errs.Code
		reason     string
		disposal   string
		nextPrefix string
	}{
		{name: "ran to its end", act: publish(store.StateEnded, nil), ok: true},
		{name: "stopped on a divergence", act: publish(store.StateStopped, &journal.RunError{Message: "run x: divergence: call 1", Code: "revision_conflict", Reason: "divergence"}),
			code: errs.RevisionConflict, reason: "divergence", disposal: "stopped", nextPrefix: "read /runs/process.log"},
		{name: "died while it ran", act: publish(store.StateRunning, nil),
			code: errs.RunUnavailable, reason: "process_died", disposal: "stopped", nextPrefix: "crw flow resume "},
		{name: "died before it held the run",
			code: errs.RunUnavailable, reason: "process_stopped", disposal: "not_started", nextPrefix: "read /runs/process.log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := mem.New()
			svc := enginetest.Service(st)
			svc.Launcher = &scriptedLauncher{st: st, act: tt.act}
			id, err := svc.Create(context.Background(), engine.CreateOptions{Workflow: "../workflows/plan-build-review.js"})
			require.NoError(t, err)
			pid, err := svc.Start(context.Background(), id)
			if tt.ok {
				require.NoError(t, err)
				assert.Equal(t, 4242, pid)
				return
			}
			e, ok := errs.As(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, tt.code, e.Code)
			require.NotNil(t, e.Diagnostic)
			assert.Equal(t, tt.reason, e.Diagnostic.Reason)
			assert.Equal(t, tt.disposal, e.Diagnostic.Disposition)
			assert.Equal(t, "/runs/process.log", e.Diagnostic.Log)
			assert.Contains(t, e.Diagnostic.NextAction, tt.nextPrefix)
		})
	}
}

// TestAProcessSaysItHoldsTheRunBeforeItsFirstCommit: a process killed right after its first
// commit (the started row) has already published that it holds the run, so crw flow start
// reports a process that died while it ran, not one that never took the run.
func TestAProcessSaysItHoldsTheRunBeforeItsFirstCommit(t *testing.T) {
	t.Parallel()
	st := mem.New()
	svc := enginetest.Service(st)
	id, err := svc.Create(context.Background(), engine.CreateOptions{Workflow: "../workflows/plan-build-review.js"})
	require.NoError(t, err)
	st.CrashAfterCommit(id, 1)
	_, err = svc.Execute(context.Background(), id, engine.ExecOptions{})
	require.Error(t, err)
	pub, held, err := st.Published(context.Background(), id)
	require.NoError(t, err)
	assert.False(t, held)
	require.NotNil(t, pub, "published before the started row")
	assert.Equal(t, store.StateRunning, pub.State)
	assert.Equal(t, os.Getpid(), pub.PID)
	rows, err := svc.Rows(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, []string{journal.TypeStarted}, enginetest.Types(rows))
}

// TestCancelEndsARunNoProcessHolds: a crashed or paused run is cancelled without a process: its
// open calls end held cancelled, the run ends cancelled and can no longer be resumed; an ended
// run is refused.
func TestCancelEndsARunNoProcessHolds(t *testing.T) {
	t.Parallel()
	for name, svc := range services(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			wfPath := filepath.Join(dir, "wf.js")
			require.NoError(t, os.WriteFile(wfPath, []byte(`import { agent } from "crw:agent";
export default async function main() {
  const a = await agent.call({ role: "explorer", node: "a", prompt: "first" });
  const b = await agent.call({ role: "explorer", node: "b", prompt: "second" });
  return [a.status, b.status];
}
`), 0o644))
			answers, err := fake.ParseAnswers("answers.json", []byte(`{"answers": [
  {"match": {"node": "a"}, "turns": [{"text": "A"}]},
  {"match": {"node": "b"}, "turns": [{"text": "B"}]}
]}`))
			require.NoError(t, err)

			// Crashed: its process stopped while call b was in flight (its answer held).
			host := fake.NewHost("")
			id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wfPath})
			require.NoError(t, err)
			require.Error(t, stopWhenSent(t, svc, id, enginetest.GateAnswers(fake.New(answers, host), enginetest.Nodes("b")), host, 2))
			st, err := svc.Cancel(ctx, id, time.Second)
			require.NoError(t, err)
			assert.Equal(t, store.StateEnded, st.State)
			assert.Equal(t, store.RunCancelled, st.Status)
			require.NotNil(t, st.Error)
			assert.Equal(t, "cancelled", st.Error.Reason)
			rows, err := svc.Rows(ctx, id)
			require.NoError(t, err)
			b := enginetest.Terminal(t, rows, "c2")
			assert.Equal(t, journal.TypeHeld, b.Type)
			assert.Equal(t, "cancelled", b.Reason)
			assert.Equal(t, []string{"fake-c2-t1"}, b.TurnIDs)
			assert.Equal(t, journal.TypeCompleted, enginetest.Terminal(t, rows, "c1").Type)
			assert.Equal(t, []string{journal.TypeHeld, journal.TypeEnded}, enginetest.Types(rows[len(rows)-2:]))
			_, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(answers, host)})
			assert.Equal(t, errs.RunUnavailable, errs.CodeOf(err), "%v", err)

			// Ended: nothing to cancel, nothing written.
			_, err = svc.Cancel(ctx, id, time.Second)
			assert.Equal(t, errs.RunUnavailable, errs.CodeOf(err))
			assert.ErrorContains(t, err, "has ended")
			again, err := svc.Rows(ctx, id)
			require.NoError(t, err)
			assert.Len(t, again, len(rows))

			// Never executed: the journal still opens with a started row.
			id, err = svc.Create(ctx, engine.CreateOptions{Workflow: wfPath})
			require.NoError(t, err)
			st, err = svc.Cancel(ctx, id, time.Second)
			require.NoError(t, err)
			assert.Equal(t, store.RunCancelled, st.Status)
			rows, err = svc.Rows(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, []string{journal.TypeStarted, journal.TypeEnded}, enginetest.Types(rows))
			assert.Equal(t, id, rows[0].Run)
			assert.Equal(t, wfPath, rows[0].Workflow)
			tl, err := svc.Timeline(ctx, id, timeline.Options{})
			require.NoError(t, err)
			assert.Equal(t, id, tl.Run)
			_, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(answers, host)})
			assert.Equal(t, errs.RunUnavailable, errs.CodeOf(err), "%v", err)

			// Paused: a usage limit held call a.
			paused, err := fake.ParseAnswers("answers.json", []byte(`{"answers": [{"turns": [{"error": "usageLimitExceeded"}]}]}`))
			require.NoError(t, err)
			id, err = svc.Create(ctx, engine.CreateOptions{Workflow: wfPath})
			require.NoError(t, err)
			end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(paused, fake.NewHost(""))})
			require.NoError(t, err)
			require.Equal(t, store.RunPaused, end.Status)
			st, err = svc.Cancel(ctx, id, time.Second)
			require.NoError(t, err)
			assert.Equal(t, store.StateEnded, st.State)
			assert.Equal(t, store.RunCancelled, st.Status)
		})
	}
}

// TestALostLeaseIsNotLoggedInTheRunsFolder: a process that lost its run does not write to the
// run's log, which another holder may own by then.
func TestALostLeaseIsNotLoggedInTheRunsFolder(t *testing.T) {
	t.Parallel()
	st := mem.New()
	svc := enginetest.Service(st)
	id, err := svc.Create(context.Background(), engine.CreateOptions{Workflow: "../workflows/plan-build-review.js"})
	require.NoError(t, err)
	st.CrashAfterCommit(id, 2)
	_, err = svc.Execute(context.Background(), id, engine.ExecOptions{})
	require.ErrorIs(t, err, store.ErrLeaseLost)
	for _, line := range strings.Split(strings.TrimSpace(st.LogText(id)), "\n") {
		// The workflow's lines from before the loss may be there; no account of the error.
		assert.True(t, line == "" || strings.Contains(line, `"kind":"console"`), "a line of the lost process: %s", line)
	}
}

// lettingGoStore is a store whose Published lets the lease go once it has been asked n times:
// the holder's process, which wrote its run's end, ends while a resume looks at it.
type lettingGoStore struct {
	store.Store
	lease store.Lease
	n     int
	asked int
}

func (s *lettingGoStore) Published(ctx context.Context, run string) (*store.Status, bool, error) {
	s.asked++
	if s.asked == s.n && s.lease != nil {
		if err := s.lease.Release(); err != nil {
			return nil, false, err
		}
		s.lease = nil
	}
	return s.Store.Published(ctx, run)
}

// TestAResumeWaitsForAHolderThatIsLettingGo: a run whose process published its end (paused) and
// still holds it for the moment it takes to end is not refused held by a resume's check, which
// waits for the hold to go; one whose holder goes on (it publishes no end) is refused at once.
func TestAResumeWaitsForAHolderThatIsLettingGo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte("export default async function main() { return 1; }\n"), 0o600))
	for _, tt := range []struct {
		name      string
		published *store.Status
		held      bool
		asked     int
	}{
		{"letting go", &store.Status{State: store.StatePaused, Status: store.RunPaused}, false, 3},
		{"going on", &store.Status{State: store.StateRunning}, true, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := &lettingGoStore{Store: mem.New(), n: 3}
			svc := enginetest.Service(st)
			id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
			require.NoError(t, err)
			lease, err := st.Acquire(ctx, id)
			require.NoError(t, err)
			st.lease = lease
			pub := *tt.published
			pub.Run = id
			lease.Publish(&pub)
			err = svc.CheckResumable(ctx, id)
			assert.Equal(t, tt.held, errors.Is(err, store.ErrHeld), "%v", err)
			assert.GreaterOrEqual(t, st.asked, tt.asked, "the looks at its holder")
			if !tt.held {
				assert.Nil(t, st.lease, "the holder let the run go while the check waited")
			} else {
				assert.Equal(t, 1, st.asked, "refused at the first look")
				require.NoError(t, lease.Release())
			}
		})
	}
}
