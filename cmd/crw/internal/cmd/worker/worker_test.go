package worker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
)

func TestNewCmdWorker(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdWorker)
	require.NoError(t, err)
	assert.Equal(t, 4, opts.Slots)
	opts, err = cmdtest.Parse(t, e, NewCmdWorker, "--slots", "9")
	require.NoError(t, err)
	assert.Equal(t, 9, opts.Slots)
	_, err = cmdtest.Parse(t, e, NewCmdWorker, "extra")
	assert.Error(t, err)
}

func TestAWorkerNeedsASlot(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	err := runWorker(&Options{Common: e.Common(), Slots: 0})
	assert.EqualError(t, err, "invalid_request: --slots must be 1 to 1024, got 0")
	err = runWorker(&Options{Common: e.Common(), Slots: 1 << 62})
	assert.EqualError(t, err, "invalid_request: --slots must be 1 to 1024, got 4611686018427387904")
}
