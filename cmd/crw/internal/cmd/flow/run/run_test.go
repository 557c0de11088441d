package run

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine"
)

func TestNewCmdRun(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdRun, "wf.js", "--answers", "a.json", "--input", "@-", "--pool", "2", "--lib", "l1", "--no-repo")
	require.NoError(t, err)
	c := opts.Create
	assert.Equal(t, "wf.js", c.Workflow)
	assert.Equal(t, "fake", c.Backend, "the default backend")
	assert.Equal(t, map[string]string{"answers": "a.json"}, c.BackendOpts)
	assert.Equal(t, "@-", c.Input)
	assert.Equal(t, 2, c.Pool)
	assert.Equal(t, new(2), c.RunOptions.Pool)
	assert.Equal(t, []string{"l1"}, c.LibDirs)
	assert.True(t, c.NoRepo)

	opts, err = cmdtest.Parse(t, e, NewCmdRun, "wf.js")
	require.NoError(t, err)
	assert.Empty(t, opts.Create.BackendOpts, "no backend option given")
	assert.Equal(t, 4, opts.Create.Pool, "the flag's default, the engine's")
	assert.Nil(t, opts.Create.RunOptions.Pool, "a flag not given leaves the option unset")
	assert.Equal(t, engine.CreateLimits{}, opts.Create.RunOptions.Limits)
	assert.Equal(t, "auto", opts.Create.TierSteps)

	opts, err = cmdtest.Parse(t, e, NewCmdRun, "wf.js", "--max-heap", "64", "--max-prompt", "1", "--max-log", "9223372036854775807", "--deadline", "0")
	require.NoError(t, err)
	l := opts.Create.RunOptions.Limits
	assert.Equal(t, engine.CreateLimits{HeapBytes: new(int64(64 << 20)), PromptBytes: new(int64(1 << 10)), LogBytes: new(int64(math.MaxInt64)), Deadline: new(time.Duration(0))}, l,
		"the limits given, in bytes; a size past an int64 held at its bound, for the engine to refuse")
}

func TestRunToItsEnd(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdRun, e.File(t, "wf.js", cmdtest.OneCall), "--no-repo", "--answers", e.File(t, "answers.json", cmdtest.OneAnswer))
	require.NoError(t, err)
	require.NoError(t, runRun(opts))
	assert.Equal(t, `{"v":"hi"}`+"\n", e.Out.String())
	assert.True(t, e.Factory.Outcome.RunOutput, "its errors take the shape of a run's end")
	assert.NotEmpty(t, e.Factory.Outcome.Run, "its errors name the run it made")

	e.Out.Reset()
	e.JSON = true
	opts.Common = e.Common()
	require.NoError(t, runRun(opts))
	assert.Equal(t, `{"run":"`+e.Factory.Outcome.Run+`","status":"completed","result":{"v":"hi"},"error":null,"calls":{"completed":1}}`+"\n", e.Out.String())
}

func TestRunThatThrowsExits1(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdRun, e.File(t, "wf.js", "export default async function main() { throw new Error(\"no\"); }\n"), "--no-repo")
	require.NoError(t, err)
	err = runRun(opts)
	assert.Equal(t, cmdutil.ExitError{Code: cmdutil.ExitFailed}, err)
	assert.Contains(t, e.ErrOut.String(), "crw: the workflow threw: no\n")
	assert.Contains(t, e.ErrOut.String(), "run "+e.Factory.Outcome.Run+" failed; see crw flow show "+e.Factory.Outcome.Run+"\n")
	assert.Empty(t, e.Out.String(), "no result")
}

func TestRunRefusesABadPool(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	err := cmdtest.Exec(t, e, NewCmdRun, e.File(t, "wf.js", cmdtest.OneCall), "--no-repo", "--pool", "0")
	assert.EqualError(t, err, "invalid_request: --pool: must be 1 or more, got 0")
	assert.True(t, e.Factory.Outcome.RunOutput)
	assert.Empty(t, e.Factory.Outcome.Run, "no run was made")
}
