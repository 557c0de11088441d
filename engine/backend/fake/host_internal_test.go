package fake

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend"
)

type nopRecorder struct{}

func (nopRecorder) Commit() error              { return nil }
func (nopRecorder) Thread(backend.Thread)      {}
func (nopRecorder) Started(string)             {}
func (nopRecorder) Warn(reason, detail string) {}

// TestTheRunsOwnHostKeepsNothingPerTurn: the host a run's process opens is read by nobody, so
// it must not keep a count or a prompt of every turn (a 100,000-call run would hold them all);
// its log, when asked for, still gets every turn.
func TestTheRunsOwnHostKeepsNothingPerTurn(t *testing.T) {
	log := filepath.Join(t.TempDir(), "host.log")
	t.Setenv(HostLogEnv, log)
	opened, err := Descriptor().Open(backend.Config{Options: map[string]string{}})
	require.NoError(t, err)
	for _, b := range []*Backend{opened.(*Backend), New(nil, nil)} {
		for i := 1; i <= 50; i++ {
			c := backend.Call{ID: fmt.Sprintf("c%d", i), Index: i, Attempt: 1, Role: "r", Node: "n"}
			out := b.Run(context.Background(), backend.Turn{Call: c, K: 1, Prompt: "p"}, nopRecorder{})
			require.Equal(t, backend.Answered, out.Status)
		}
		assert.Empty(t, b.host.sends)
		assert.Empty(t, b.host.prompts)
	}
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, 50, strings.Count(string(data), "\n"), "the opened host logs every turn")
}
