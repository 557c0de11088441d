package check

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
)

func TestNewCmdCheck(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdCheck, "wf.js", "--seed", "24")
	require.NoError(t, err)
	assert.Equal(t, "wf.js", opts.Workflow)
	assert.Equal(t, uint64(24), opts.Seed)
	assert.True(t, opts.SeedOnly, "--seed alone names one schedule")
	assert.Equal(t, 0, opts.Faults)

	opts, err = cmdtest.Parse(t, e, NewCmdCheck, "wf.js", "--seed", "24", "--faults", "3", "--timeout", "5s", "--lib", "a", "--lib", "b")
	require.NoError(t, err)
	assert.False(t, opts.SeedOnly)
	assert.Equal(t, 3, opts.Faults)
	assert.Equal(t, 5*time.Second, opts.Timeout)
	assert.Equal(t, []string{"a", "b"}, opts.LibDirs)
}

func TestCheckOptions(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	wf := e.File(t, "wf.js", cmdtest.OneCall)
	co, err := checkOptions(&Options{Common: e.Common(), Workflow: wf, Seed: 24, SeedOnly: true, MaxCalls: 7})
	require.NoError(t, err)
	assert.Equal(t, 1, co.Faults)
	assert.Equal(t, uint64(24), co.Seed)
	assert.Equal(t, 7, co.MaxCalls)

	_, err = checkOptions(&Options{Common: e.Common(), Workflow: wf, Faults: 10001})
	assert.EqualError(t, err, "invalid_request: --faults 10001: at most 10000 schedules")
	// The run it rehearses is checked by the engine: its errors name their flags.
	err = cmdtest.Exec(t, e, NewCmdCheck, e.Dir)
	assert.EqualError(t, err, "invalid_request: workflow "+e.Dir+": not a readable file")
	err = cmdtest.Exec(t, e, NewCmdCheck, wf, "--lib", e.Dir+"/nope")
	assert.EqualError(t, err, "invalid_request: --lib "+e.Dir+"/nope: not a folder")
	err = cmdtest.Exec(t, e, NewCmdCheck, wf, "--input", "@"+wf)
	assert.ErrorContains(t, err, "invalid_request: --input @"+wf+": not JSON: ")
}

func TestCheckFindsNothingInOneCall(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	wf := e.File(t, "wf.js", cmdtest.OneCall)
	require.NoError(t, runCheck(&Options{Common: e.Common(), Workflow: wf, MaxCalls: 100, Timeout: time.Minute}))
	assert.Equal(t, "0 found; the rehearsal made 1 calls and ended completed\n", e.Out.String())
}

func TestCheckFailsOnAFinding(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	wf := e.File(t, "wf.js", `import { agent } from "crw:agent";
export default async function main() {
  return await agent.call({ role: "explorer", prompt: "look", schemaa: {} });
}
`)
	err := runCheck(&Options{Common: e.Common(), Workflow: wf, MaxCalls: 100, Timeout: time.Minute})
	assert.Equal(t, cmdutil.Failed, err)
	assert.Contains(t, e.Out.String(), wf+":3:")
}
