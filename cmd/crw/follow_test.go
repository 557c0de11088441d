package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAFollowBegunWhileTheRunRunsTellsItsProcessSoFar: crw flow follow of a run whose process
// runs begins with what that process did before the follow began (c1's end, the workflow's
// line after it), then goes on with what it does (c2 held by the cancel), each line once.
func TestAFollowBegunWhileTheRunRunsTellsItsProcessSoFar(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	wf, answers := filepath.Join(dir, "wf.js"), filepath.Join(dir, "answers.json")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() {
  await agent.call({ role: "reviewer", node: "a", prompt: "first" });
  console.log("a done");
  await agent.call({ role: "reviewer", node: "b", prompt: "second" });
  return "ok";
}`), 0o644))
	// c2's answer comes after ten minutes: the cancel ends the run long before.
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [{"match": {"node": "a"}, "turns": [{"text": "ok"}]},
  {"match": {"node": "b"}, "turns": [{"text": "ok", "delay_ms": 600000}]}]}`), 0o644))
	start := durableCrw(t, state, nil, "flow", "start", wf, "--backend", "fake", "--no-repo", "--answers", answers)
	require.Equal(t, 0, start.exit, start.stderr)
	run := strings.TrimSpace(start.stdout)
	untilRuns(t, state, nil, nil, "c1 completed and c2 in flight", func(rs map[string]listed) bool {
		return rs[run].State == "running" && rs[run].Calls["completed"] == 1 && rs[run].InFlight == 1
	})

	follow := exec.Command("crw", "flow", "follow", run)
	follow.Dir = dir
	follow.Env = append(os.Environ(), "CRW_STATE="+state, "GORACE=atexit_sleep_ms=0")
	errOut := &syncLog{}
	follow.Stderr = errOut
	require.NoError(t, follow.Start())
	exited := make(chan struct{})
	go func() { _ = follow.Wait(); close(exited) }()
	// The follow has read the run once it says so: its first lines are its backlog.
	untilRuns(t, state, nil, exited, "the follow began", func(map[string]listed) bool {
		return strings.Contains(errOut.String(), "ended") || strings.Contains(errOut.String(), "running:")
	})
	cancel := durableCrw(t, state, nil, "flow", "cancel", run)
	require.Equal(t, 0, cancel.exit, cancel.stderr)
	<-exited

	got := errOut.String()
	assert.Equal(t, 1, strings.Count(got, "call c1 reviewer/a completed\n"), got)
	assert.Equal(t, 1, strings.Count(got, "log: a done\n"), got)
	assert.Less(t, strings.Index(got, "call c1 reviewer/a completed"), strings.Index(got, "log: a done"), got)
	assert.Contains(t, got, "call c2 reviewer/b held (cancelled)\n", got)
	assert.Equal(t, 1, follow.ProcessState.ExitCode(), "a cancelled run's follow exits 1: %s", got)
}
