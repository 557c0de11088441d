package start

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
)

func TestNewCmdStart(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdStart, "wf.js")
	require.NoError(t, err)
	assert.Equal(t, "wf.js", opts.Create.Workflow)
	assert.Equal(t, "session", opts.Create.Backend, "a started run is a session run unless --backend says otherwise")
	assert.False(t, opts.DryRun)

	opts, err = cmdtest.Parse(t, e, NewCmdStart, "wf.js", "--backend", "fake", "--answers", "a.json", "--dry-run", "--budget-tokens", "900")
	require.NoError(t, err)
	assert.Equal(t, "fake", opts.Create.Backend)
	assert.Equal(t, map[string]string{"answers": "a.json"}, opts.Create.BackendOpts)
	assert.True(t, opts.DryRun)
	assert.Equal(t, int64(900), opts.Create.BudgetTokens)
}

func TestStartRefusesABadPool(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	err := cmdtest.Exec(t, e, NewCmdStart, e.File(t, "wf.js", cmdtest.OneCall), "--backend", "fake", "--no-repo", "--pool", "0")
	assert.EqualError(t, err, "invalid_request: --pool: must be 1 or more, got 0")
	assert.True(t, e.Factory.Outcome.Detached, "it hands the run to a process of its own")
	assert.Empty(t, e.Out.String())
}

func TestStartDryRunStartsNothing(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdStart, e.File(t, "wf.js", cmdtest.OneCall), "--backend", "fake", "--no-repo", "--dry-run")
	require.NoError(t, err)
	require.NoError(t, runStart(opts))
	assert.Equal(t, "a fake run would start; nothing was started\n", e.Out.String())
	svc, err := e.Factory.Service()
	require.NoError(t, err)
	runs, err := svc.List(t.Context())
	require.NoError(t, err)
	assert.Empty(t, runs, "no run was made")
}

// TestStartDryRunIsRefusedWhatAStartIs: a dry run's options are checked by the engine as a
// start's are, its errors naming their flags, and nothing is made.
func TestStartDryRunIsRefusedWhatAStartIs(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	wf := e.File(t, "wf.js", cmdtest.OneCall)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--pool", "0"}, "invalid_request: --pool: must be 1 or more, got 0"},
		{[]string{"--max-log", "0"}, "invalid_request: --max-log: 0 MiB; it must be from 1 MiB to 1 GiB"},
		{[]string{"--tier-steps", "x"}, `invalid_request: --tier-steps: "x" is not auto or ask`},
		{[]string{"--input", "{"}, "invalid_request: --input: not JSON: unexpected end of JSON input"},
		{[]string{"--answers", e.Dir}, "invalid_request: --answers " + e.Dir + ": cannot read"},
	} {
		err := cmdtest.Exec(t, e, NewCmdStart, append([]string{wf, "--backend", "fake", "--no-repo", "--dry-run"}, tt.args...)...)
		require.Error(t, err, tt.args)
		assert.True(t, strings.HasPrefix(err.Error(), tt.want), "%v: %v", tt.args, err)
	}
	assert.Empty(t, e.Out.String())
	svc, err := e.Factory.Service()
	require.NoError(t, err)
	runs, err := svc.List(t.Context())
	require.NoError(t, err)
	assert.Empty(t, runs, "no run was made")
}

// TestStartQueueMakesARunAndStartsNothing: --queue creates the run and starts no process: the
// run is there, no process holds it (a worker takes it); a session run cannot be queued (its
// owner's host binds it), and nothing is made then.
func TestStartQueueMakesARunAndStartsNothing(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	wf := e.File(t, "wf.js", cmdtest.OneCall)
	e.JSON = true
	require.NoError(t, cmdtest.Exec(t, e, NewCmdStart, wf, "--backend", "fake", "--no-repo", "--queue"))
	svc, err := e.Factory.Service()
	require.NoError(t, err)
	runs, err := svc.List(t.Context())
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.JSONEq(t, `{"run":"`+runs[0].Run+`","queued":true}`, e.Out.String())
	assert.Equal(t, "queued", string(runs[0].State), "no process has run it")
	assert.Zero(t, runs[0].Calls.Total())
	assert.Equal(t, runs[0].Run, e.Factory.Outcome.Run)

	err = cmdtest.Exec(t, e, NewCmdStart, wf, "--no-repo", "--queue")
	assert.EqualError(t, err, "invalid_request: --queue: a session run is started by its owner's host, which binds it: give --backend fake or app-server")
	runs, err = svc.List(t.Context())
	require.NoError(t, err)
	assert.Len(t, runs, 1, "the refused queue made no run")
}
