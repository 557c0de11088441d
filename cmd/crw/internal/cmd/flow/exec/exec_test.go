package exec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
)

func TestNewCmdExec(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	cmd := NewCmdExec(e.Factory, nil)
	assert.Equal(t, "_exec RUN", cmd.Use)
	assert.True(t, cmd.Hidden, "no reader calls it")

	opts, err := cmdtest.Parse(t, e, NewCmdExec, "20260101-000000-abcdef")
	require.NoError(t, err)
	assert.Equal(t, "20260101-000000-abcdef", opts.Run)

	_, err = cmdtest.Parse(t, e, NewCmdExec)
	assert.EqualError(t, err, "accepts 1 arg(s), received 0")
}
