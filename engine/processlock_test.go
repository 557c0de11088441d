package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/runner"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

// locklessStore holds runs as a process that could not take its process lock does.
type locklessStore struct{ store.Store }

func (s locklessStore) Acquire(ctx context.Context, run string) (store.Lease, error) {
	l, err := s.Store.Acquire(ctx, run)
	if err != nil {
		return nil, err
	}
	return locklessLease{l}, nil
}

type locklessLease struct{ store.Lease }

func (locklessLease) Token() string           { return "" }
func (locklessLease) ProcessLockError() error { return errors.New("no room for a process lock") }

// TestARunWithoutAProcessLockGoesOnAndSaysSo (seed 003): a process lock that cannot be taken is
// warned about, and the run goes on with a started row that names no process.
func TestARunWithoutAProcessLockGoesOnAndSaysSo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := enginetest.Service(locklessStore{mem.New()})
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() { return (await agent.call({ role: "explorer", prompt: "look" })).status; }
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	res, err := svc.Execute(ctx, id, engine.ExecOptions{})
	require.NoError(t, err)
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, res.Status, "%+v", res.Error)
	require.GreaterOrEqual(t, len(rows), 2)
	assert.Equal(t, journal.TypeStarted, rows[0].Type)
	assert.Empty(t, rows[0].Process, "the started row names no process")
	assert.Equal(t, journal.TypeWarning, rows[1].Type, "the warning comes right after the started row")
	assert.Equal(t, runner.ReasonProcessLockUnavailable, rows[1].Reason)
	assert.Contains(t, rows[1].Detail, "no room for a process lock")
}
