package effects

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
)

func TestNewCmdEffects(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdEffects)
	require.NoError(t, err)
	assert.Empty(t, opts.Runs)
	assert.Equal(t, 100, opts.Limit)

	opts, err = cmdtest.Parse(t, e, NewCmdEffects, "20260101-000000-abcdef", "--limit", "3")
	require.NoError(t, err)
	assert.Equal(t, []string{"20260101-000000-abcdef"}, opts.Runs)
	assert.Equal(t, 3, opts.Limit)

	_, err = cmdtest.Parse(t, e, NewCmdEffects, "a", "b")
	assert.EqualError(t, err, "accepts at most 1 arg(s), received 2")
}

func TestEffectsOfARunWithNone(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	require.NoError(t, runEffects(&Options{Common: e.Common(), Runs: []string{end.Run}, Limit: 100}))
	assert.Equal(t, "no unresolved effect\n", e.Out.String())
	assert.Equal(t, end.Run, e.Factory.Outcome.Run, "its errors name the run")

	e.Out.Reset()
	e.JSON = true
	require.NoError(t, runEffects(&Options{Common: e.Common(), Limit: 100}))
	assert.Equal(t, `{"effects":[]}`+"\n", e.Out.String())
}

func TestEffectsOfNoRun(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	err := runEffects(&Options{Common: e.Common(), Runs: []string{"20260101-000000-abcdef"}, Limit: 100})
	assert.EqualError(t, err, "invalid_request: no run 20260101-000000-abcdef in the state folder "+e.State)
	assert.Equal(t, "20260101-000000-abcdef", e.Factory.Outcome.Run)
}
