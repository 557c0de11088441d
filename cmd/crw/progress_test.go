package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/backends"
	"github.com/crw-dev/crw/cmd/crw/internal/cli"
)

// TestTheTerminalShowsTheCallsUnderWay: on a terminal, crw flow run's status line names the
// calls under way with their node and how long they have run, and each call that ends gets
// its line above it.
func TestTheTerminalShowsTheCallsUnderWay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() {
  const slow = await agent.call({ role: "explorer", node: "slow", prompt: "take your time" });
  return slow.status;
}
`), 0o644))
	answers := filepath.Join(dir, "a.json")
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [{"match": {"node": "slow"}, "turns": [{"text": "done", "delay_ms": 1500}]}]}`), 0o644))
	var out, errOut bytes.Buffer
	code := cli.Run([]string{"flow", "run", wf, "--answers", answers, "--no-repo", "--state", filepath.Join(dir, "state")},
		cli.IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, ErrIsTTY: true}, backends.Registry())
	require.Equal(t, 0, code, errOut.String())
	assert.Regexp(t, `\r\x1b\[Krun \S+  1 in flight \(c1 explorer/slow \d+(\.\d)?(ms|s)\)  0 done`, errOut.String())
	assert.Contains(t, errOut.String(), "\r\x1b[Kcall c1 explorer/slow completed\n")
	assert.Regexp(t, `run \S+  0 in flight  1 done  \d+ tokens`, errOut.String())
}
