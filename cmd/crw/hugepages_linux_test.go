package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestACommandThatRunsWorkflowsHasHugePages: the process that runs a started run (crw flow
// _exec) has its heap's 48 MiB advised for huge pages once its call is in flight (readied
// before the command ran), and a long-lived crw mcp has no more advised than the first chunks
// of its heap that every crw process readies as its packages are initialized
// (internal/gctune/earlyheap) once it answers: the annotation reaches the process, not only
// the command tree.
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
	assert.Greater(t, hugePageKB(t, started.PID), firstChunkKB, "the run's process has no more than its first chunks advised for huge pages")

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
	assert.LessOrEqual(t, hugePageKB(t, cmd.Process.Pid), firstChunkKB, "crw mcp, a long-lived server, readies no huge pages beyond its heap's first chunks")
}

// firstChunkKB is the most of the heap's first chunks that every crw process advises for huge
// pages: the chunk its packages' allocations reach, and the one before where the heap began.
const firstChunkKB = 8 << 10

// hugePageKB is the size, in KiB, of the mappings of process pid advised for huge pages
// ("hg").
func hugePageKB(t *testing.T, pid int) int {
	smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	require.NoError(t, err)
	total, size := 0, 0
	for _, l := range strings.Split(string(smaps), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 2 && f[0] == "Size:":
			size, err = strconv.Atoi(f[1])
			require.NoError(t, err, "%s", l)
		case len(f) > 0 && f[0] == "VmFlags:" && slices.Contains(f[1:], "hg"):
			total += size
		}
	}
	return total
}

// TestTheEarlyHeapIsReadiedBeforeThePackagesThatFillIt: earlyheap's init runs before those of
// the packages whose allocations it readies the heap for: it imports nothing past syscall, so
// the packages initialized before it are only some of those that sort before "syscall" (a
// package's import of strings once put it after unicode, the crypto packages and
// encoding/gob, and ~40 of the heap's pages were faulted 4 KiB at a time before it ran).
func TestTheEarlyHeapIsReadiedBeforeThePackagesThatFillIt(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var order []string // the packages in the order their inits ran ("init PATH @...")
	for _, line := range strings.Split(string(out), "\n") {
		if fields := strings.Fields(line); len(fields) > 2 && fields[0] == "init" {
			order = append(order, fields[1])
		}
	}
	early := slices.Index(order, "github.com/crw-dev/crw/internal/gctune/earlyheap")
	require.GreaterOrEqual(t, early, 0, "no init of earlyheap in the trace:\n%s", out)
	for _, later := range []string{"time", "os", "unicode", "reflect", "encoding/gob", "crypto/internal/fips140/rsa", "github.com/itchyny/gojq"} {
		at := slices.Index(order, later)
		require.GreaterOrEqual(t, at, 0, "no init of %s in the trace:\n%s", later, out)
		assert.Greater(t, at, early, "%s is initialized before earlyheap", later)
	}
}
