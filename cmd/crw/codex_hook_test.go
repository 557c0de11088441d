package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheSpawnHookDecidesOnceTheEventIsWhole: Codex may leave the hook's input open after the
// event; the hook decides as soon as the one JSON document is whole (a spawn of an owner no run
// binds passes: no output, exit 0), and a line that is no JSON lets the spawn pass at once,
// saying why, without waiting for the input to end.
func TestTheSpawnHookDecidesOnceTheEventIsWhole(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "state")
	for _, tc := range []struct {
		name, input, stderr string
	}{
		{"a whole event", `{"session_id":"019b0000-0000-7000-8000-00000000abcd","turn_id":"t","hook_event_name":"PreToolUse","tool_name":"spawn_agent","tool_use_id":"call_1","tool_input":{"agent_type":"reviewer","message":"Review.","fork_context":false}}` + "\n", ""},
		{"no JSON", "garbage {\n", "crw codex hook: the event is not a JSON object: it starts with 'g', not {"},
		{"a number the input does not end", "12345", "crw codex hook: the event is not a JSON object"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "crw", "codex", "hook")
		cmd.Env = append(os.Environ(), "CRW_STATE="+state, "GORACE=atexit_sleep_ms=0")
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Start())
		_, err = io.WriteString(stdin, tc.input)
		require.NoError(t, err)
		// The input stays open: the hook must not wait for its end.
		err = cmd.Wait()
		require.NoError(t, ctx.Err(), "%s: the hook waited for its input to end", tc.name)
		assert.NoError(t, err, "%s: %s", tc.name, stderr.String())
		assert.Empty(t, stdout.String(), tc.name)
		if tc.stderr == "" {
			assert.Empty(t, stderr.String(), tc.name)
		} else {
			assert.Contains(t, stderr.String(), tc.stderr, tc.name)
		}
		stdin.Close()
		cancel()
	}
}
