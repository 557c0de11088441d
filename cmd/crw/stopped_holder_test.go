package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAStoppedHolderIsSaidAtOnce: the process that holds a run is stopped (SIGSTOP, as a
// suspended terminal does). status (from what the process published) and show (which fails:
// only the holder has the rows) say so within about a second (holder, holder_stopped, naming
// its pid), not after the control socket's ten; cancel stores its request and says it
// is not confirmed (cancel_unconfirmed, exit 1); once the process is continued it obeys the
// stored request and the run ends cancelled.
func TestAStoppedHolderIsSaidAtOnce(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("a process's state is read from /proc")
	}
	state := filepath.Join(t.TempDir(), "state")
	started := startSlowRun(t, state)
	require.NoError(t, syscall.Kill(started.PID, syscall.SIGSTOP))
	continued := false
	t.Cleanup(func() {
		if !continued {
			_ = syscall.Kill(started.PID, syscall.SIGCONT)
		}
		_ = syscall.Kill(started.PID, syscall.SIGKILL)
	})
	// Wait for the stop to take: the process's state, not a time.
	for !stopped(started.PID) {
		time.Sleep(5 * time.Millisecond)
	}

	// status answers from what the holder published, and says it is stopped.
	began := time.Now()
	res := durableCrw(t, state, nil, "flow", "status", started.Run, "--json")
	t.Logf("status: %s", time.Since(began).Round(time.Millisecond))
	require.Equal(t, 0, res.exit, res.stderr)
	var st struct {
		State  string `json:"state"`
		Holder string `json:"holder"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &st), res.stdout)
	assert.Equal(t, "running", st.State)
	assert.Contains(t, st.Holder, "the process that holds it (pid "+strconv.Itoa(started.PID)+") is stopped")
	res = durableCrw(t, state, nil, "flow", "status", started.Run)
	assert.Contains(t, res.stdout, "holder    the process that holds it (pid ")
	assert.Contains(t, res.stdout, "next      the process that holds it (pid "+strconv.Itoa(started.PID)+") is stopped", "the next step is to continue it")
	// show needs the rows, which only the holder can give: it says why it has none.
	began = time.Now()
	res = durableCrw(t, state, nil, "flow", "show", started.Run, "--json")
	t.Logf("show: %s", time.Since(began).Round(time.Millisecond))
	assert.Equal(t, 1, res.exit, res.stdout+res.stderr)
	assert.Contains(t, res.stdout+res.stderr, "holder_stopped")
	assert.Contains(t, res.stdout+res.stderr, "kill -CONT "+strconv.Itoa(started.PID))

	began = time.Now()
	res = durableCrw(t, state, nil, "flow", "cancel", started.Run, "--json")
	t.Logf("cancel: %s", time.Since(began).Round(time.Millisecond))
	assert.Equal(t, 1, res.exit, res.stdout+res.stderr)
	assert.Contains(t, res.stdout+res.stderr, "(pid "+strconv.Itoa(started.PID)+") is stopped", "it does not wait out --wait (30 s): a stopped process ends nothing")
	assert.Contains(t, res.stdout+res.stderr, "cancel_unconfirmed")
	assert.Contains(t, res.stdout+res.stderr, "the cancel is stored but not confirmed")

	require.NoError(t, syscall.Kill(started.PID, syscall.SIGCONT))
	continued = true
	for {
		res = durableCrw(t, state, nil, "flow", "status", started.Run, "--json")
		var st struct {
			State  string `json:"state"`
			Status string `json:"status"`
		}
		if json.Unmarshal([]byte(res.stdout), &st) == nil && st.State == "ended" {
			assert.Equal(t, "cancelled", st.Status, "the continued process obeyed the stored cancel")
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stopped reads a process's state from /proc: T, stopped.
func stopped(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	for i := len(data) - 1; i >= 0; i-- {
		if data[i] == ')' {
			return i+2 < len(data) && data[i+2] == 'T'
		}
	}
	return false
}

// slowRun is a run started in a process of its own (crw flow start) whose one call the fake
// backend answers in ten minutes: its process stays alive, the call in flight.
type slowRun struct {
	Run string `json:"run"`
	PID int    `json:"pid"`
}

// startSlowRun starts a slowRun in state; the caller kills its process.
func startSlowRun(t *testing.T, state string) slowRun {
	t.Helper()
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() {
  return (await agent.call({ role: "explorer", prompt: "slow" })).status;
}
`), 0o644))
	answers := filepath.Join(dir, "slow.json")
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [{"turns": [{"text": "late", "delay_ms": 600000}]}]}`), 0o644))
	res := durableCrw(t, state, nil, "flow", "start", wf, "--backend", "fake", "--answers", answers, "--json")
	require.Equal(t, 0, res.exit, res.stderr)
	var started slowRun
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &started), res.stdout)
	require.NotZero(t, started.PID)
	return started
}
