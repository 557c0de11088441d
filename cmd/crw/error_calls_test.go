package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAnErrorSaysWhatCallsTheRunHad: crw flow run --json stopped by a signal after its first
// call completed answers {"status": "error", …} with the calls its journal holds, not none.
func TestAnErrorSaysWhatCallsTheRunHad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  await agent.call({ role: "explorer", node: "a", prompt: "quick" });
  crw.log("first done");
  return (await agent.call({ role: "explorer", node: "b", prompt: "slow" })).status;
}
`), 0o644))
	answers := filepath.Join(dir, "a.json")
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [{"match": {"node": "b"}, "turns": [{"text": "late", "delay_ms": 600000}]}]}`), 0o644))
	cmd := exec.Command("crw", "flow", "run", wf, "--answers", answers, "--json")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CRW_STATE="+state, "GORACE=atexit_sleep_ms=0")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// The console line comes once the first call has completed: then the signal.
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), "first done") {
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	go func() {
		for sc.Scan() {
		}
	}()
	_ = cmd.Wait()
	var out struct {
		Status string         `json:"status"`
		Calls  map[string]int `json:"calls"`
		Error  struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), stdout.String())
	assert.Equal(t, "error", out.Status)
	assert.Equal(t, 1, out.Calls["completed"], "the journal's completed call: %s", stdout.String())
}
