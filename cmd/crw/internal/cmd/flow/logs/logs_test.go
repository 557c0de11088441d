package logs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
)

func TestNewCmdLogs(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdLogs, "20260101-000000-abcdef")
	require.NoError(t, err)
	assert.Equal(t, "20260101-000000-abcdef", opts.Run)
	assert.False(t, opts.Follow)

	opts, err = cmdtest.Parse(t, e, NewCmdLogs, "20260101-000000-abcdef", "-f")
	require.NoError(t, err)
	assert.True(t, opts.Follow)
}

// logs is a workflow that writes two lines to its log.
const logs = `import crw from "crw";
export default async function main() {
  console.log("hello");
  crw.log("world");
  return 1;
}
`

func TestLogsOfAnEndedRun(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, logs, "")
	opts := &Options{RunOptions: cmdutil.RunOptions{Common: e.Common(), RunArg: cmdutil.RunArg{Run: end.Run}}}
	require.NoError(t, runLogs(opts))
	assert.Regexp(t, `^\d\d:\d\d:\d\d log: hello\n\d\d:\d\d:\d\d info: world\n$`, e.Out.String())
	assert.Equal(t, end.Run, e.Factory.Outcome.Run)

	e.Out.Reset()
	e.JSON = true
	opts.Common, opts.Follow = e.Common(), true // an ended run: -f prints what there is and returns
	require.NoError(t, runLogs(opts))
	assert.Regexp(t, `^\{"at":"[^"]+","kind":"console","level":"log","message":"hello"\}\n\{"at":"[^"]+","kind":"console","level":"info","message":"world"\}\n$`, e.Out.String())
}

func TestLogsOfNoRun(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	err := runLogs(&Options{RunOptions: cmdutil.RunOptions{Common: e.Common(), RunArg: cmdutil.RunArg{Run: "20260101-000000-abcdef"}}})
	assert.EqualError(t, err, "invalid_request: no run 20260101-000000-abcdef in the state folder "+e.State)
}
