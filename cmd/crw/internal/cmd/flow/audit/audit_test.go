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
}
