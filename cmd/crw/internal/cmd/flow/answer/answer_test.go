package answer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
)

func TestNewCmdAnswer(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdAnswer, "20260101-000000-abcdef", "keep", "--value", `{"keep": true}`, "--no-resume")
	require.NoError(t, err)
	assert.Equal(t, "20260101-000000-abcdef", opts.Run)
	assert.Equal(t, "keep", opts.Decision)
	assert.Equal(t, `{"keep": true}`, opts.Value)
	assert.True(t, opts.ValueSet)
	assert.True(t, opts.NoResume)

	opts, err = cmdtest.Parse(t, e, NewCmdAnswer, "20260101-000000-abcdef", "keep")
	require.NoError(t, err)
	assert.False(t, opts.ValueSet, "no --value")
	assert.False(t, opts.NoResume)
}

func TestAnswerWithoutValueNamesTheRun(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	err := runAnswer(&Options{Common: e.Common(), Run: "20260101-000000-abcdef", Decision: "keep"})
	assert.EqualError(t, err, "invalid_request: --value is required: the answer, as JSON or @FILE")
	assert.Equal(t, "20260101-000000-abcdef", e.Factory.Outcome.Run)
}

func TestAnswerOfARunThatHasEnded(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	e.In.WriteString(`{"keep": true}`)
	err := runAnswer(&Options{Common: e.Common(), Run: end.Run, Decision: "keep", Value: "@-", ValueSet: true, NoResume: true})
	assert.EqualError(t, err, "run_unavailable: run "+end.Run+" has ended (completed): it takes no answer")
	assert.Empty(t, e.Out.String(), "nothing is printed of a refused answer")
}
