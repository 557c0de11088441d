package next

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
)

func TestNewCmdNext(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdNext, "20260101-000000-abcdef")
	require.NoError(t, err)
	assert.Equal(t, "20260101-000000-abcdef", opts.Run)
	assert.Zero(t, opts.Wait)

	opts, err = cmdtest.Parse(t, e, NewCmdNext, "20260101-000000-abcdef", "--wait", "30")
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, opts.Wait, "a number of seconds")

	opts, err = cmdtest.Parse(t, e, NewCmdNext, "20260101-000000-abcdef", "--wait", "2m")
	require.NoError(t, err)
	assert.Equal(t, 2*time.Minute, opts.Wait)
}

func TestNextRefusesANegativeWait(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	err := runNext(&Options{RunOptions: cmdutil.RunOptions{Common: e.Common(), RunArg: cmdutil.RunArg{Run: "20260101-000000-abcdef"}}, Wait: -time.Second})
	assert.EqualError(t, err, "invalid_request: --wait: must not be negative, got -1s")
	assert.Equal(t, "20260101-000000-abcdef", e.Factory.Outcome.Run, "its error names the run")
}

func TestNextOfARunThatIsNoSessionRun(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	err := runNext(&Options{RunOptions: cmdutil.RunOptions{Common: e.Common(), RunArg: cmdutil.RunArg{Run: end.Run}}})
	assert.EqualError(t, err, "invalid_request: run "+end.Run+" runs on the fake backend, not session: it has no steps for an owner")
	assert.Empty(t, e.Out.String())
}
