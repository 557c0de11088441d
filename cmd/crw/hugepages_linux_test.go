package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestACommandThatRunsWorkflowsHasHugePages: a real crw mcp process, once it answers, has a
// mapping advised for huge pages (its heap, readied before the command ran): the annotation
// reaches the process, not only the command tree.
func TestACommandThatRunsWorkflowsHasHugePages(t *testing.T) {
	t.Parallel()
	cmd := mcpCommand(t, filepath.Join(t.TempDir(), "state"))
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

	smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", cmd.Process.Pid))
	require.NoError(t, err)
	advised := 0
	for _, l := range strings.Split(string(smaps), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "VmFlags:" && slices.Contains(f[1:], "hg") {
			advised++
		}
	}
	assert.Positive(t, advised, "no mapping of crw mcp is advised for huge pages")
}
