package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestACommandThatRunsWorkflowsHasHugePages: the process that runs a started run (crw flow
// _exec) has a mapping advised for huge pages once its call is in flight (its heap, readied
// before the command ran), and a long-lived crw mcp, which readies nothing, has none once it
// answers: the annotation reaches the process, not only the command tree.
func TestACommandThatRunsWorkflowsHasHugePages(t *testing.T) {
	t.Parallel()
	if mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("this system gives no transparent huge pages (%q, %v)", mode, err)
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	started := startSlowRun(t, state)
	t.Cleanup(func() { _ = syscall.Kill(started.PID, syscall.SIGKILL) })
	untilRuns(t, state, nil, nil, "the run's call in flight", func(runs map[string]listed) bool {
		return runs[started.Run].InFlight > 0
	})
	assert.Positive(t, hugePageMappings(t, started.PID), "no mapping of the run's process is advised for huge pages")

	cmd := mcpCommand(t, filepath.Join(dir, "mcp-state"))
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		in.Close()
		_ = cmd.Wait()
	}()
	_, err = fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	require.NoError(t, err)
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, line)
	assert.Zero(t, hugePageMappings(t, cmd.Process.Pid), "crw mcp, a long-lived server, readies no huge pages")
}

// hugePageMappings counts the mappings of process pid advised for huge pages ("hg").
func hugePageMappings(t *testing.T, pid int) int {
	smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	require.NoError(t, err)
	n := 0
	for _, l := range strings.Split(string(smaps), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "VmFlags:" && slices.Contains(f[1:], "hg") {
			n++
		}
	}
	return n
}
