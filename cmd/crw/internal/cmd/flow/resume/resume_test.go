package resume

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
)

func TestNewCmdResume(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdResume, "20260101-000000-abcdef", "edited.js", "--detach", "--budget-tokens", "0")
	require.NoError(t, err)
	assert.Equal(t, "20260101-000000-abcdef", opts.Run)
	assert.Equal(t, []string{"edited.js"}, opts.ScriptArgs)
	assert.True(t, opts.Detach)
	assert.True(t, opts.BudgetSet, "--budget-tokens 0 is a change too")
	assert.Equal(t, int64(0), opts.Budget)

	opts, err = cmdtest.Parse(t, e, NewCmdResume, "20260101-000000-abcdef", "--answers", "more.json")
	require.NoError(t, err)
	assert.Empty(t, opts.ScriptArgs)
	assert.False(t, opts.BudgetSet)
	assert.Equal(t, "more.json", opts.Answers)
}

func TestResumeChange(t *testing.T) {
	t.Parallel()
	change, err := resumeChange(&Options{ScriptArgs: []string{"a.js"}, Script: "a.js", Budget: 500, BudgetSet: true})
	require.NoError(t, err)
	assert.Equal(t, "a.js", change.Script)
	require.NotNil(t, change.BudgetTokens)
	assert.Equal(t, int64(500), *change.BudgetTokens)

	change, err = resumeChange(&Options{Script: "b.js", Answers: "x.json"})
	require.NoError(t, err)
	assert.Equal(t, "b.js", change.Script)
	assert.Equal(t, "x.json", change.Answers)
	assert.Nil(t, change.BudgetTokens)

	_, err = resumeChange(&Options{ScriptArgs: []string{"a.js"}, Script: "b.js"})
	assert.EqualError(t, err, "invalid_request: resume: the script is named twice (a.js and --script b.js)")
}

func TestResumeOfAnEndedRunInTheForeground(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	e.JSON = true
	err := runResume(&Options{Common: e.Common(), Run: end.Run})
	require.Error(t, err)
	assert.True(t, e.Factory.Outcome.RunOutput, "its errors take the shape of a run's end")
	assert.False(t, e.Factory.Outcome.Detached)
	assert.Equal(t, end.Run, e.Factory.Outcome.Run)
}
