package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// hookLog is what the hooks of a hooked backend saw, in order, over a run's processes.
type hookLog struct {
	mu     sync.Mutex
	events []string
	// startedRows is, at each OnStart, how many started rows the run's journal held durable.
	startedRows []int
	// live is, at each OnStart, what Config.Live said of the run itself and of a run that
	// does not exist.
	live []string
	// endCtx is, at each OnEnd, its context's error.
	endCtx []error
	// failStart makes OnStart fail with this error.
	failStart error
}

func (l *hookLog) add(event string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, event)
}

func (l *hookLog) took() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.events
	l.events = nil
	return out
}

// hooked is the fake backend with lifecycle hooks that log what they are called with.
type hooked struct {
	backend.Backend
	cfg backend.Config
	log *hookLog
	svc *engine.Service
}

func (h *hooked) Name() string { return "hooked" }

func (h *hooked) OnStart(ctx context.Context, s backend.RunStarted) error {
	started := 0
	if err := h.svc.Store.Rows(ctx, s.Run, 1, func(r *journal.Row) error {
		if r.Type == journal.TypeStarted {
			started++
		}
		return nil
	}); err != nil {
		started = -1
	}
	h.log.mu.Lock()
	h.log.startedRows = append(h.log.startedRows, started)
	h.log.live = append(h.log.live, fmt.Sprintf("%v %v", h.cfg.Live(s.Run), h.cfg.Live("20990101-000000-nobody")))
	h.log.mu.Unlock()
	h.log.add(fmt.Sprintf("start %v %d", s.Run == h.cfg.Run, s.Process))
	return h.log.failStart
}

func (h *hooked) OnEnd(ctx context.Context, end *store.Status) error {
	h.log.mu.Lock()
	h.log.endCtx = append(h.log.endCtx, ctx.Err())
	h.log.mu.Unlock()
	if end == nil {
		h.log.add("end nil")
		return nil
	}
	h.log.add(fmt.Sprintf("end %s %s", end.State, end.Status))
	return errors.New("the end hook warns")
}

func (h *hooked) Close() error {
	h.log.add("close")
	return h.Backend.Close()
}

// hookedService is a run service on a state folder whose one backend, hooked, logs its hooks
// to log; it returns the service and a run created on it of script, with answers (JSON).
func hookedService(t *testing.T, log *hookLog, script, answers string) (*engine.Service, string, string) {
	t.Helper()
	root := t.TempDir()
	st, err := local.New(filepath.Join(root, "state"))
	require.NoError(t, err)
	svc := &engine.Service{Store: st}
	fd := fake.Descriptor()
	svc.Backends = backend.NewRegistry(backend.Descriptor{Name: "hooked", Options: fd.Options, Prepare: fd.Prepare,
		Open: func(cfg backend.Config) (backend.Backend, error) {
			be, err := fd.Open(cfg)
			if err != nil {
				return nil, err
			}
			return &hooked{Backend: be, cfg: cfg, log: log, svc: svc}, nil
		}})
	wf, answersFile := filepath.Join(root, "wf.js"), filepath.Join(root, "answers.json")
	require.NoError(t, os.WriteFile(wf, []byte(script), 0o644))
	require.NoError(t, os.WriteFile(answersFile, []byte(answers), 0o644))
	id, err := svc.Create(context.Background(), engine.CreateOptions{Workflow: wf, Backend: "hooked", BackendOpts: map[string]string{"answers": answersFile}})
	require.NoError(t, err)
	return svc, id, root
}

const hookedScript = `import { agent } from "crw:agent";
export default async function main() {
  const r = await agent.call({ role: "reviewer", node: "a", prompt: "review" });
  return r.status + "/" + r.reason;
}
`

// TestBackendLifecycleHooks: a backend.Lifecycle backend's OnStart is called once its process's
// started row is durable (after ExecOptions.OnStart), and its OnEnd once per process, before
// Close, with the run's end: for a process that completes the run, one that pauses it and the
// one that resumes it, one that ends it cancelled; a process that stops without ending the run
// (a workflow that no longer loads, a caller that stops it) gets OnEnd(nil), and OnStart only
// when its started row was written. A hook's error is a warning of the process (ExecOptions.
// Warn), and the run goes on.
func TestBackendLifecycleHooks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	execute := func(svc *engine.Service, id string, log *hookLog, x engine.ExecOptions) (*store.Status, []string, error) {
		var warnings []string
		x.Warn = func(w string) { warnings = append(warnings, w) }
		x.OnStart = func(string) { log.add("exec start") }
		end, err := svc.Execute(ctx, id, x)
		return end, warnings, err
	}

	t.Run("completes", func(t *testing.T) {
		t.Parallel()
		log := &hookLog{failStart: errors.New("the start hook warns")}
		svc, id, _ := hookedService(t, log, hookedScript, `{"answers": []}`)
		end, warnings, err := execute(svc, id, log, engine.ExecOptions{})
		require.NoError(t, err)
		assert.Equal(t, store.RunCompleted, end.Status)
		assert.Equal(t, []string{"exec start", "start true 1", "end ended completed", "close"}, log.took())
		assert.Equal(t, []string{"the start hook warns", "the end hook warns"}, warnings)
		assert.Equal(t, []int{1}, log.startedRows, "the started row is durable when OnStart is called")
		assert.Equal(t, []string{"true false"}, log.live, "the run is live while its process holds it")
	})

	t.Run("pauses, then resumes", func(t *testing.T) {
		t.Parallel()
		log := &hookLog{}
		svc, id, root := hookedService(t, log, hookedScript, `{"answers": [{"match": {}, "turns": [{"error": "rateLimitExceeded"}]}]}`)
		end, _, err := execute(svc, id, log, engine.ExecOptions{})
		require.NoError(t, err)
		assert.Equal(t, store.RunPaused, end.Status)
		assert.Equal(t, []string{"exec start", "start true 1", "end paused paused", "close"}, log.took())

		require.NoError(t, os.WriteFile(filepath.Join(root, "answers.json"), []byte(`{"answers": []}`), 0o644))
		end, _, err = execute(svc, id, log, engine.ExecOptions{})
		require.NoError(t, err)
		assert.Equal(t, store.RunCompleted, end.Status)
		assert.Equal(t, []string{"exec start", "start true 2", "end ended completed", "close"}, log.took())
		assert.Equal(t, []int{1, 2}, log.startedRows)
	})

	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		log := &hookLog{}
		svc, id, _ := hookedService(t, log, hookedScript, `{"answers": []}`)
		require.NoError(t, svc.Store.RequestCancel(ctx, id))
		end, _, err := execute(svc, id, log, engine.ExecOptions{})
		require.NoError(t, err)
		assert.Equal(t, store.RunCancelled, end.Status)
		assert.Equal(t, []string{"exec start", "start true 1", "end ended cancelled", "close"}, log.took())
	})

	t.Run("the workflow does not load", func(t *testing.T) {
		t.Parallel()
		log := &hookLog{}
		svc, id, root := hookedService(t, log, hookedScript, `{"answers": []}`)
		require.NoError(t, os.WriteFile(filepath.Join(root, "wf.js"), []byte("export default async function main() {\n  const x = ;\n}\n"), 0o644))
		end, warnings, err := execute(svc, id, log, engine.ExecOptions{})
		require.Error(t, err)
		assert.Nil(t, end)
		assert.Equal(t, []string{"end nil", "close"}, log.took(), "no started row: OnEnd alone")
		assert.Empty(t, warnings)
	})

	t.Run("its caller stops it", func(t *testing.T) {
		t.Parallel()
		log := &hookLog{}
		svc, id, _ := hookedService(t, log, hookedScript, `{"answers": []}`)
		stopCtx, stop := context.WithCancel(ctx)
		defer stop()
		var warnings []string
		end, err := svc.Execute(stopCtx, id, engine.ExecOptions{
			OnStart: func(string) { log.add("exec start"); stop() },
			Warn:    func(w string) { warnings = append(warnings, w) },
		})
		require.Error(t, err)
		assert.Nil(t, end)
		assert.Equal(t, []string{"exec start", "start true 1", "end nil", "close"}, log.took())
		assert.Equal(t, []error{nil}, log.endCtx, "OnEnd's context is not cut short by the caller's stop")
		assert.Empty(t, warnings)
	})

	t.Run("a backend given by the caller", func(t *testing.T) {
		t.Parallel()
		log := &hookLog{}
		svc, id, _ := hookedService(t, log, hookedScript, `{"answers": []}`)
		end, _, err := execute(svc, id, log, engine.ExecOptions{Backend: &hooked{Backend: fake.New(nil, nil), log: log, svc: svc,
			cfg: backend.Config{Run: id, Live: func(string) bool { return false }}}})
		require.NoError(t, err)
		assert.Equal(t, store.RunCompleted, end.Status)
		assert.Equal(t, []string{"exec start", "start true 1", "end ended completed", "close"}, log.took())
	})
}

var _ backend.Lifecycle = (*hooked)(nil)
