package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// durableRun is one crw command's outcome.
type durableRun struct {
	stdout, stderr string
	exit           int  // -1 when killed
	killed         bool // by SIGKILL
}

// durableCrw runs crw (the test binary under the name crw) with state as its state folder.
func durableCrw(t *testing.T, state string, env []string, args ...string) durableRun {
	t.Helper()
	cmd := exec.Command("crw", args...)
	cmd.Dir = filepath.Dir(state) // in no git checkout: the run has no repository
	cmd.Env = append(append(os.Environ(), "CRW_STATE="+state, "GORACE=atexit_sleep_ms=0"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := durableRun{stdout: out.String(), stderr: errOut.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			r.killed = true
		}
	case err != nil:
		t.Fatalf("crw %v: %v", args, err)
	}
	return r
}

// TestDurableDetachedResumeDivergence: a detached resume of a run whose script was edited so
// that a recorded call differs cannot go on. Whether the detached process has already failed
// on its divergence when the command checks on it must not change what the command says: every
// attempt exits 1 and names the divergence, and the run stays resumable by the original script.
func TestDurableDetachedResumeDivergence(t *testing.T) {
	t.Parallel()
	// Killed after commit 2 the diverging call is open (its turn was sent); after commit 3 it
	// has its result.
	for _, commit := range []string{"2", "3"} {
		t.Run("crash after commit "+commit, func(t *testing.T) {
			t.Parallel()
			testDetachedResumeDivergence(t, commit)
		})
	}
}

func testDetachedResumeDivergence(t *testing.T, commit string) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	wf := filepath.Join(dir, "wf.js")
	original := `import { agent } from "crw:agent";

export default async function main() {
  const a = await agent.call({ role: "explorer", node: "a", prompt: "one" });
  const b = await agent.call({ role: "explorer", node: "b", prompt: "two" });
  return [a.output, b.output];
}
`
	require.NoError(t, os.WriteFile(wf, []byte(original), 0o600))
	r := durableCrw(t, state, []string{local.CrashAfterCommitEnv + "=" + commit}, "flow", "run", wf)
	require.True(t, r.killed, "the run was to be killed after commit %s: %+v", commit, r)
	ids, err := enginetest.State(state).Runs()
	require.NoError(t, err)
	require.Len(t, ids, 1)
	run := ids[0]

	require.NoError(t, os.WriteFile(wf, []byte(strings.Replace(original, `prompt: "one"`, `prompt: "one, edited"`, 1)), 0o600))
	var wrong []string
	for i := 0; i < 8; i++ {
		r := durableCrw(t, state, nil, "flow", "resume", run, "--detach")
		if r.exit != 1 || !strings.Contains(r.stderr, "divergence: call 1 (c1, node \"a\")") {
			wrong = append(wrong, r.stdout+r.stderr)
		}
		// Whatever it said, its process is gone and left the run as it was.
		require.Eventually(t, func() bool { return !local.Held(state, run) }, pollTimeout, 10*time.Millisecond)
		st, err := enginetest.State(state).Status(run)
		require.NoError(t, err)
		require.Equal(t, store.StateCrashed, st.State)
	}
	if len(wrong) > 0 {
		t.Fatalf("crw flow resume RUN --detach of a diverging script exits 0 (it printed the run id as if it went on) when state.json names its process before the process fails, and 1 otherwise: %d of 8 attempts: %q", len(wrong), wrong)
	}

	require.NoError(t, os.WriteFile(wf, []byte(original), 0o600))
	r = durableCrw(t, state, nil, "flow", "resume", run, "--json")
	require.Equal(t, 0, r.exit, "%+v", r)
	var res struct {
		Status string          `json:"status"`
		Result json.RawMessage `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	assert.Equal(t, "completed", res.Status)
	assert.JSONEq(t, `["ok", "ok"]`, string(res.Result))
}
