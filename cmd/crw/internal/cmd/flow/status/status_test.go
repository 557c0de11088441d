package status

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
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

	require.NoError(t, runStatus(&Options{Common: e.Common(), RunArg: cmdutil.RunArg{Run: end.Run}}))
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
	require.NoError(t, runStatus(&Options{Common: e.Common(), RunArg: cmdutil.RunArg{Run: end.Run}}))
	assert.Contains(t, e.Out.String(), `"state":"ended","status":"completed"`)
	assert.Contains(t, e.Out.String(), `"result":{"v":"hi"}`)
}

func TestStatusOfNoRun(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	err := runStatus(&Options{Common: e.Common(), RunArg: cmdutil.RunArg{Run: "20260101-000000-abcdef"}})
	assert.EqualError(t, err, "invalid_request: no run 20260101-000000-abcdef in the state folder "+e.State)
	assert.Empty(t, e.Out.String())
}
