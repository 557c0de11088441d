package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/sessiontest"
)

// coreRecorder is a backend.Recorder and no pull.Recorder.
type coreRecorder struct{}

func (coreRecorder) Commit() error         { return nil }
func (coreRecorder) Thread(backend.Thread) {}
func (coreRecorder) Started(string)        {}
func (coreRecorder) Warn(string, string)   {}

// TestSessionRunsATurnOnlyOnAPullRecorder: given a recorder that is not the engine's
// pull.Recorder, the session backend publishes no step: the turn is Unavailable.
func TestSessionRunsATurnOnlyOnAPullRecorder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := session.New(session.Config{Run: "r", Owner: owner, Host: sessiontest.NewHost(owner), Dir: dir, Poll: 5 * time.Millisecond})
	defer b.Close()
	out := b.Run(context.Background(), backend.Turn{Call: backend.Call{ID: "c1", Index: 1, Attempt: 1, Role: "reviewer"}, K: 1, Prompt: "p"}, coreRecorder{})
	assert.Equal(t, backend.Unavailable, out.Status)
	steps, _, err := bus.Bus{Dir: dir}.Steps()
	require.NoError(t, err)
	assert.Empty(t, steps)
}
