package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// rowOutOfPlace is the fake backend, but for node "two" it records the call's thread again
// once the turn has started: a row no call state allows there.
type rowOutOfPlace struct{ *fake.Backend }

func (b *rowOutOfPlace) Run(ctx context.Context, t backend.Turn, rec backend.Recorder) backend.Outcome {
	out := b.Backend.Run(ctx, t, rec)
	if t.Call.Node == "two" {
		rec.Thread(backend.Thread{ID: "another-thread"})
	}
	return out
}

// A backend that records a call's row out of its place stops the run: the row is not written,
// the error names the call, its state and the row, the journal stays one every reader takes,
// and a resume with a backend that behaves ends the run as an uninterrupted one would.
func TestARowOutOfPlaceStopsTheRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() {
  const one = await agent.call({ role: "reviewer", node: "one", prompt: "first" });
  const two = await agent.call({ role: "reviewer", node: "two", prompt: "second" });
  return [one.status, two.status];
}
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	host := fake.NewHost("")
	_, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: &rowOutOfPlace{fake.New(nil, host)}})
	var e *errs.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errs.CapabilityUnavailable, e.Code)
	assert.Contains(t, err.Error(), "call c2: a thread_started row is no transition from state task_turn (its rows: prepared, thread_started, turn_started k 1)")

	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	enginetest.CheckJournal(t, rows)
	assert.Equal(t, 1, enginetest.Count(rows, "c2", journal.TypeThreadStarted), "the row out of place is not written")
	assert.Equal(t, 0, len(enginetest.OfType(rows, journal.TypeEnded)), "the run did not end")

	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, host)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["completed", "completed"]`, string(end.Result))
	rows, err = svc.Rows(ctx, id)
	require.NoError(t, err)
	enginetest.CheckJournal(t, rows)
}
