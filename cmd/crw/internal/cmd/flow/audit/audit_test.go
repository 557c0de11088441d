package audit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
)

func TestNewCmdAudit(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdAudit)
	require.NoError(t, err)
	assert.Empty(t, opts.Run, "every run's entries")
	assert.Equal(t, 50, opts.Limit)

	opts, err = cmdtest.Parse(t, e, NewCmdAudit, "20260101-000000-abcdef", "--limit", "7")
	require.NoError(t, err)
	assert.Equal(t, "20260101-000000-abcdef", opts.Run)
	assert.Equal(t, 7, opts.Limit)
}

func TestAuditOfAStateFolderWithNoEntry(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer) // a run made by the service, not by a command: no entry
	require.NoError(t, runAudit(&Options{Common: e.Common(), Limit: 50}))
	assert.Empty(t, e.Out.String())

	e.JSON = true
	require.NoError(t, runAudit(&Options{Common: e.Common(), Limit: 50}))
	assert.Equal(t, `{"audit":[]}`+"\n", e.Out.String())
	assert.Empty(t, e.Factory.Outcome.Run, "no run named")
}

func TestAuditOfARunNamesIt(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	e.JSON = true
	require.NoError(t, runAudit(&Options{Common: e.Common(), Run: end.Run, Limit: 50}))
	assert.Equal(t, `{"audit":[],"run":"`+end.Run+`"}`+"\n", e.Out.String())
	assert.Equal(t, end.Run, e.Factory.Outcome.Run, "its errors name the run")
}

func TestAuditOfARunRefusedNamesIt(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	err := runAudit(&Options{Common: e.Common(), Run: end.Run, Limit: 0})
	assert.EqualError(t, err, "invalid_request: limit: 1 to 10000, got 0", "the engine names its field; RunE names the flag")
	assert.Equal(t, end.Run, e.Factory.Outcome.Run, "the error names the run")
	assert.Empty(t, e.Out.String())
}
