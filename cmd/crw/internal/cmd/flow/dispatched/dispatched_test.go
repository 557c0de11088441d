package dispatched

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
	"github.com/crw-dev/crw/engine/backend/session/bus"
)

func TestNewCmdDispatched(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdDispatched, "20260101-000000-abcdef", "c3", "--agent", "019a")
	require.NoError(t, err)
	assert.Equal(t, bus.Report{Run: "20260101-000000-abcdef", Call: "c3", Agent: "019a", K: 1, Attempt: 1}, opts.Report)
	assert.Equal(t, 120*time.Second, opts.Wait)

	opts, err = cmdtest.Parse(t, e, NewCmdDispatched, "20260101-000000-abcdef", "c3", "--agent", "019a", "--k", "2", "--attempt", "3", "--wait", "1.5")
	require.NoError(t, err)
	assert.Equal(t, 2, opts.Report.K)
	assert.Equal(t, 3, opts.Report.Attempt)
	assert.Equal(t, 1500*time.Millisecond, opts.Wait, "a number is seconds")

	_, err = cmdtest.Parse(t, e, NewCmdDispatched, "20260101-000000-abcdef", "c3")
	assert.EqualError(t, err, `required flag(s) "agent" not set`)
	_, err = cmdtest.Parse(t, e, NewCmdDispatched, "20260101-000000-abcdef", "c3", "--agent", "a", "--wait", "soon")
	assert.EqualError(t, err, `invalid argument "soon" for "--wait" flag: "soon" is neither a number of seconds nor a duration (30s, 2m)`)
}

func TestDispatchedRefusesANegativeWait(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	err := runDispatched(&Options{Common: e.Common(), Report: bus.Report{Run: "20260101-000000-abcdef"}, Wait: -time.Second})
	assert.EqualError(t, err, "invalid_request: --wait: must not be negative, got -1s")
	assert.Equal(t, "20260101-000000-abcdef", e.Factory.Outcome.Run)
}
