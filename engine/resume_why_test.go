package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

// refusingStore is a store whose Acquire fails with acquireErr, and whose runs are gone
// (Spec not found) once gone is set and their spec was read once more (the resume's own read,
// before the delete took the run away).
type refusingStore struct {
	*mem.Store
	acquireErr error
	gone       atomic.Bool
	reads      atomic.Int32
}

func (s *refusingStore) Acquire(ctx context.Context, run string) (store.Lease, error) {
	return nil, s.acquireErr
}

func (s *refusingStore) Spec(ctx context.Context, run string) (*store.Spec, error) {
	if s.gone.Load() && s.reads.Add(1) > 1 {
		return nil, errs.New(errs.InvalidRequest, "no run %s", run).Wrap(store.ErrNotFound)
	}
	spec, err := s.Store.Spec(ctx, run)
	return spec, err
}

// TestAResumeSaysWhatKeptItFromTheRun: a resume that cannot take the run because the run has
// ended (a read-only state folder refuses its lock) says the run has ended; one whose run was
// deleted while it was taken (its journal then reads as damaged) says it was deleted, not that
// the journal is incompatible.
func TestAResumeSaysWhatKeptItFromTheRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`export default async function main() { return 1; }`), 0o644))
	st := mem.New()
	svc := enginetest.Service(st)
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status)

	readOnly := &refusingStore{Store: st, acquireErr: errs.New(errs.CapabilityUnavailable, "run %s: cannot take the run lock", id)}
	_, err = enginetest.Service(readOnly).Execute(ctx, id, engine.ExecOptions{})
	require.Error(t, err)
	assert.Equal(t, errs.RunUnavailable, errs.CodeOf(err))
	assert.Contains(t, err.Error(), "has ended (completed): there is nothing to resume")

	deleted := &refusingStore{Store: st, acquireErr: errs.New(errs.IncompatibleSchema, "run %s: the journal does not read", id)}
	svcDeleted := enginetest.Service(deleted)
	other, err := svcDeleted.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	deleted.acquireErr = errs.New(errs.IncompatibleSchema, "run %s: the journal does not read", other)
	deleted.gone.Store(true)
	_, err = svcDeleted.Execute(ctx, other, engine.ExecOptions{})
	require.Error(t, err)
	assert.Equal(t, errs.RunUnavailable, errs.CodeOf(err))
	assert.Contains(t, err.Error(), "was deleted while it was being taken")
}

// TestAnEndedRunIsRefusedFromItsSummary: on the state folder's store a resume of a run that has
// ended is refused from the journal's summary, before its rows are read; one that ended
// waiting for a decision, answered since, goes on.
func TestAnEndedRunIsRefusedFromItsSummary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import crw from "crw";
export default async function main({ ask }) {
  if (ask) await crw.decide({ id: "go", question: "Go on?", schema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false } });
  return 1;
}`), 0o644))
	svc := localService(t, filepath.Join(t.TempDir(), "state"))
	done, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Input: []byte(`{"ask":false}`)})
	require.NoError(t, err)
	end, err := svc.Execute(ctx, done, engine.ExecOptions{})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status)
	_, err = svc.Execute(ctx, done, engine.ExecOptions{})
	require.Error(t, err)
	assert.Equal(t, errs.RunUnavailable, errs.CodeOf(err))
	assert.Contains(t, err.Error(), "run "+done+" has ended (completed): there is nothing to resume")

	waits, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Input: []byte(`{"ask":true}`)})
	require.NoError(t, err)
	end, err = svc.Execute(ctx, waits, engine.ExecOptions{})
	require.NoError(t, err)
	require.Equal(t, store.RunWaitingDecision, end.Status)
	_, err = svc.Answer(ctx, waits, "go", []byte(`{"ok":true}`), "test", false)
	require.NoError(t, err)
	end, err = svc.Execute(ctx, waits, engine.ExecOptions{})
	require.NoError(t, err)
	assert.Equal(t, store.RunCompleted, end.Status)
}
