package follow

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
)

func TestNewCmdFollow(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdFollow, "20260101-000000-abcdef")
	require.NoError(t, err)
	assert.Equal(t, "20260101-000000-abcdef", opts.Run)

	_, err = cmdtest.Parse(t, e, NewCmdFollow)
	assert.EqualError(t, err, "accepts 1 arg(s), received 0")
}

func TestFollowAnEndedRunPrintsItsEnd(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	require.NoError(t, runFollow(&Options{Common: e.Common(), RunArg: cmdutil.RunArg{Run: end.Run}}))
	assert.Equal(t, `{"v":"hi"}`+"\n", e.Out.String(), "the run's result")
	assert.Contains(t, e.ErrOut.String(), "call c1 ", "its last process's call, though it ended before the follow began")
	assert.True(t, e.Factory.Outcome.RunOutput, "its errors take the shape of a run's end")
	assert.Equal(t, end.Run, e.Factory.Outcome.Run)

	e.Out.Reset()
	e.JSON = true
	require.NoError(t, runFollow(&Options{Common: e.Common(), RunArg: cmdutil.RunArg{Run: end.Run}}))
	assert.Equal(t, `{"run":"`+end.Run+`","status":"completed","result":{"v":"hi"},"error":null,"calls":{"completed":1}}`+"\n", e.Out.String())
}

func TestFollowAFailedRunExits1(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, "export default async function main() { throw new Error(\"no\"); }\n", "")
	err := runFollow(&Options{Common: e.Common(), RunArg: cmdutil.RunArg{Run: end.Run}})
	assert.Equal(t, cmdutil.ExitError{Code: cmdutil.ExitFailed}, err)
	assert.Contains(t, e.ErrOut.String(), "run "+end.Run+" failed; see crw flow show "+end.Run+"\n")
	assert.Empty(t, e.Out.String())
}
