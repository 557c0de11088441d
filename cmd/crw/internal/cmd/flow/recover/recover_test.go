package recover

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
)

func TestNewCmdRecover(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdRecover, "20260101-000000-abcdef", "c3", "--applied", "--output", "@a.json")
	require.NoError(t, err)
	assert.Equal(t, "20260101-000000-abcdef", opts.Run)
	assert.Equal(t, "c3", opts.Call)
	assert.True(t, opts.Applied)
	assert.False(t, opts.NotApplied)
	assert.Equal(t, "@a.json", opts.Output)
	assert.True(t, opts.OutputSet)

	opts, err = cmdtest.Parse(t, e, NewCmdRecover, "20260101-000000-abcdef", "c3", "--not-applied", "--no-resume")
	require.NoError(t, err)
	assert.True(t, opts.NotApplied)
	assert.True(t, opts.NoResume)
	assert.False(t, opts.OutputSet)
}

func TestRecoverRefusesBothVerdicts(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	err := runRecover(&Options{Common: e.Common(), Run: "20260101-000000-abcdef", Call: "c1", Applied: true, NotApplied: true})
	assert.EqualError(t, err, "invalid_request: recover: --applied and --not-applied exclude each other")
	assert.Equal(t, "20260101-000000-abcdef", e.Factory.Outcome.Run)
}
