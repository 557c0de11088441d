package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/enginetest"
	"github.com/crw-dev/crw/errs"
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
