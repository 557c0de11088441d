package status

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/store"
)

func TestNewCmdStatus(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	e.JSON = true
	opts, err := cmdtest.Parse(t, e, NewCmdStatus, "20260101-000000-abcdef")
	require.NoError(t, err)
	assert.Equal(t, "20260101-000000-abcdef", opts.Run)
	assert.True(t, opts.JSON)

	_, err = cmdtest.Parse(t, e, NewCmdStatus)
	assert.EqualError(t, err, "accepts 1 arg(s), received 0")
}

func TestStatusOfAnEndedRun(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)

	require.NoError(t, runStatus(&Options{RunOptions: cmdutil.RunOptions{Common: e.Common(), RunArg: cmdutil.RunArg{Run: end.Run}}}))
	assert.Equal(t, "run       "+end.Run+"\n"+
		"workflow  "+e.Dir+"/wf.js\n"+
		"backend   fake\n"+
		"state     ended\n"+
		"status    completed\n"+
		"calls     1 completed (0 in flight)\n"+
		"tokens    120\n"+
		"result    {\"v\":\"hi\"}\n", e.Out.String())
	assert.Equal(t, end.Run, e.Factory.Outcome.Run, "its errors name the run")

	e.Out.Reset()
	e.JSON = true
	require.NoError(t, runStatus(&Options{RunOptions: cmdutil.RunOptions{Common: e.Common(), RunArg: cmdutil.RunArg{Run: end.Run}}}))
	assert.Contains(t, e.Out.String(), `"state":"ended","status":"completed"`)
	assert.Contains(t, e.Out.String(), `"result":{"v":"hi"}`)
}

func TestStatusOfNoRun(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	err := runStatus(&Options{RunOptions: cmdutil.RunOptions{Common: e.Common(), RunArg: cmdutil.RunArg{Run: "20260101-000000-abcdef"}}})
	assert.EqualError(t, err, "invalid_request: no run 20260101-000000-abcdef in the state folder "+e.State)
	assert.Empty(t, e.Out.String())
}

func TestExitCodeByTheRunsState(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		state  store.State
		status store.RunStatus
		want   int
	}{
		{store.StateEnded, store.RunCompleted, 0},
		{store.StateEnded, store.RunFailed, 1},
		{store.StateEnded, store.RunCancelled, 1},
		{store.StatePaused, store.RunPaused, 3},
		{store.StateWaitingDecision, store.RunWaitingDecision, 4},
		{store.StateRunning, "", 5},
		{store.StateCrashed, "", 6},
		{store.StateQueued, "", 6},
		{store.StateWaitingResume, "", 6},
		{store.StateStopped, "", 6},
	} {
		assert.Equal(t, c.want, ExitCode(&store.Status{State: c.state, Status: c.status}), "%s %s", c.state, c.status)
	}
}

func TestExitStatusOfACompletedRunIsZero(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	opts, err := cmdtest.Parse(t, e, NewCmdStatus, end.Run, "--exit-status")
	require.NoError(t, err)
	assert.True(t, opts.ExitStatus)
	opts.Common = e.Common()
	require.NoError(t, runStatus(opts))
	assert.Contains(t, e.Out.String(), "status    completed\n", "the state is shown all the same")
}
