package inspect

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
)

func TestNewCmdInspect(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdInspect, "20260101-000000-abcdef")
	require.NoError(t, err)
	assert.Equal(t, "20260101-000000-abcdef", opts.Run)

	_, err = cmdtest.Parse(t, e, NewCmdInspect, "a", "b")
	assert.EqualError(t, err, "accepts 1 arg(s), received 2")
}

func TestInspectAnEndedRun(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	require.NoError(t, runInspect(&Options{Common: e.Common(), RunArg: cmdutil.RunArg{Run: end.Run}}))
	assert.Equal(t, "run       "+end.Run+"\n"+
		"state     ended\n"+
		"status    completed\n"+
		"calls     1 completed\n"+
		"log       "+e.State+"/flow/"+end.Run+"/crw.log\n"+
		"backend   fake\n"+
		"next      the run has ended (completed): crw flow show "+end.Run+" tells how\n", e.Out.String())
	assert.Equal(t, end.Run, e.Factory.Outcome.Run)

	e.Out.Reset()
	e.JSON = true
	require.NoError(t, runInspect(&Options{Common: e.Common(), RunArg: cmdutil.RunArg{Run: end.Run}}))
	assert.Contains(t, e.Out.String(), `"backend":{"name":"fake"`)
	assert.Contains(t, e.Out.String(), `"state":"ended","status":"completed"`)
}
