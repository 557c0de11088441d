package list

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
)

func TestNewCmdList(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdList, "--status", "running,paused", "--status", "ended", "--since", "24h", "--limit", "5")
	require.NoError(t, err)
	assert.Equal(t, []string{"running", "paused", "ended"}, opts.States)
	assert.Equal(t, 24*time.Hour, opts.Since)
	assert.Equal(t, 5, opts.Limit)

	_, err = cmdtest.Parse(t, e, NewCmdList, "extra")
	assert.EqualError(t, err, `unknown command "extra" for "list"`)
}

func TestListRefusesAStateItDoesNotKnow(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	err := runList(&Options{Common: e.Common(), States: []string{"done"}})
	assert.EqualError(t, err, `invalid_request: --status "done": one of running, paused, waiting_decision, waiting_resume, ended, crashed`)
	err = runList(&Options{Common: e.Common(), Limit: -1})
	assert.EqualError(t, err, "invalid_request: --limit and --since must not be negative")
}

func TestListOfOneRun(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)

	require.NoError(t, runList(&Options{Common: e.Common()}))
	lines := strings.Split(e.Out.String(), "\n")
	require.Len(t, lines, 3)
	assert.Regexp(t, `^RUN +STATE +STATUS +CALLS +STARTED +WORKFLOW$`, lines[0])
	assert.Regexp(t, `^`+end.Run+` +ended +completed +1 +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +`+e.Dir+`/wf\.js$`, lines[1])

	e.Out.Reset()
	require.NoError(t, runList(&Options{Common: e.Common(), States: []string{"running"}}))
	assert.Equal(t, "RUN  STATE  STATUS  CALLS  STARTED  WORKFLOW\n", e.Out.String(), "no run is running")

	e.Out.Reset()
	e.JSON = true
	require.NoError(t, runList(&Options{Common: e.Common(), States: []string{"paused"}}))
	assert.Equal(t, "{\"runs\":[]}\n", e.Out.String())
}
