package delete

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
)

func TestNewCmdDelete(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdDelete, "20260101-000000-abcdef")
	require.NoError(t, err)
	assert.Equal(t, "20260101-000000-abcdef", opts.Run)
	assert.False(t, opts.Delete.KeepRefs)

	opts, err = cmdtest.Parse(t, e, NewCmdDelete, "20260101-000000-abcdef", "--keep-refs")
	require.NoError(t, err)
	assert.True(t, opts.Delete.KeepRefs)
}

func TestDeleteAnEndedRun(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	opts := &Options{RunOptions: cmdutil.RunOptions{Common: e.Common(), RunArg: cmdutil.RunArg{Run: end.Run}}}
	require.NoError(t, runDelete(opts))
	assert.Equal(t, "run "+end.Run+" deleted\n", e.Out.String())
	assert.Equal(t, end.Run, e.Factory.Outcome.Run)

	svc, err := e.Factory.Service()
	require.NoError(t, err)
	_, err = svc.Status(opts.Ctx, end.Run)
	assert.EqualError(t, err, "invalid_request: no run "+end.Run+" in the state folder "+e.State, "nothing of the run is left")
}

func TestDeleteJSON(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	e.JSON = true
	require.NoError(t, runDelete(&Options{RunOptions: cmdutil.RunOptions{Common: e.Common(), RunArg: cmdutil.RunArg{Run: end.Run}}}))
	assert.Equal(t, `{"deleted":true,"run":"`+end.Run+`"}`+"\n", e.Out.String())
}
