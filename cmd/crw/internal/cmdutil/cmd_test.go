package cmdutil_test

import (
	"errors"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
)

// twoArgs are the Options of a command that takes two arguments with a Take of its own.
type twoArgs struct {
	cmdutil.Common
	A, B string
}

func (o *twoArgs) Take(_ *cobra.Command, args []string) { o.A, o.B = args[0], args[1] }

func TestNewCmdTakesTheArgumentsWithTheOptionsTake(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	e.JSON = true
	var ran *twoArgs
	newCmd := func(f *cmdutil.Factory, runF func(*twoArgs) error) *cobra.Command {
		return cmdutil.NewCmd(f, &twoArgs{}, runF, func(o *twoArgs) error { ran = o; return nil }, &cobra.Command{Use: "two A B", Args: cobra.ExactArgs(2)})
	}
	opts, err := cmdtest.Parse(t, e, newCmd, "a", "b")
	require.NoError(t, err)
	assert.Nil(t, ran, "runF runs in place of run")
	assert.Equal(t, "a", opts.A)
	assert.Equal(t, "b", opts.B)
	assert.True(t, opts.JSON, "the Factory's part is taken")
	assert.Same(t, e.Factory.Outcome, opts.Outcome)
	assert.Same(t, e.Factory.Backends, opts.Backends)
	state, err := opts.StateDir()
	require.NoError(t, err)
	assert.Equal(t, e.State, state)

	cmd := newCmd(e.Factory, nil)
	cmd.SetArgs([]string{"c", "d"})
	require.NoError(t, cmd.Execute())
	require.NotNil(t, ran, "without runF, run runs")
	assert.Equal(t, "c", ran.A)
	assert.Equal(t, "d", ran.B)
}

func TestNewRunCmdTakesOneRun(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	newCmd := func(f *cmdutil.Factory, runF func(*cmdutil.RunOptions) error) *cobra.Command {
		return cmdutil.NewRunCmd(f, &cmdutil.RunOptions{}, runF, func(*cmdutil.RunOptions) error { return errors.New("ran") }, &cobra.Command{Use: "one RUN"})
	}
	opts, err := cmdtest.Parse(t, e, newCmd, "20260101-000000-abcdef")
	require.NoError(t, err)
	assert.Equal(t, "20260101-000000-abcdef", opts.Run)

	_, err = cmdtest.Parse(t, e, newCmd)
	assert.EqualError(t, err, "accepts 1 arg(s), received 0")
	_, err = cmdtest.Parse(t, e, newCmd, "a", "b")
	assert.EqualError(t, err, "accepts 1 arg(s), received 2")
}

func TestNewGroupHoldsItsCommands(t *testing.T) {
	t.Parallel()
	noop := func(*cobra.Command, []string) {}
	g := cmdutil.NewGroup("g", "a group", &cobra.Command{Use: "a", Run: noop}, &cobra.Command{Use: "b", Run: noop})
	assert.Equal(t, "g", g.Use)
	assert.Equal(t, "a group", g.Short)
	require.Len(t, g.Commands(), 2)
	root := &cobra.Command{Use: "r", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(g)
	root.SetArgs([]string{"g", "c"})
	assert.EqualError(t, root.Execute(), `invalid_request: unknown command "c" for "r g"; did you mean a or b? (see r g --help)`)
	root.SetArgs([]string{"g", "zzz"})
	assert.EqualError(t, root.Execute(), `invalid_request: unknown command "zzz" for "r g" (see r g --help)`)
}
