package cancel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
)

func TestNewCmdCancel(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdCancel, "20260101-000000-abcdef")
	require.NoError(t, err)
	assert.Equal(t, "20260101-000000-abcdef", opts.Run)
	assert.Equal(t, 30*time.Second, opts.Wait)

	opts, err = cmdtest.Parse(t, e, NewCmdCancel, "20260101-000000-abcdef", "--wait", "5s")
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, opts.Wait)

	_, err = cmdtest.Parse(t, e, NewCmdCancel)
	assert.EqualError(t, err, "accepts 1 arg(s), received 0")
}

// decides is a workflow that waits for a decision: its process ends, and no process holds it.
const decides = `import crw from "crw";
export default async function main() {
  await crw.decide({ id: "go", question: "go on?", schema: {
    type: "object", properties: { go: { type: "boolean" } }, required: ["go"], additionalProperties: false } });
  return 1;
}
`

func TestCancelOfARunNoProcessHolds(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, decides, "")
	require.Equal(t, "waiting_decision", string(end.State))
	opts := &Options{RunOptions: cmdutil.RunOptions{Common: e.Common(), RunArg: cmdutil.RunArg{Run: end.Run}}, Wait: 0}
	require.NoError(t, runCancel(opts))
	assert.Equal(t, "run "+end.Run+" ended (cancelled)\n", e.Out.String())
	assert.Equal(t, end.Run, e.Factory.Outcome.Run)
}

func TestCancelOfAnEndedRun(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	e.JSON = true
	err := runCancel(&Options{RunOptions: cmdutil.RunOptions{Common: e.Common(), RunArg: cmdutil.RunArg{Run: end.Run}}})
	assert.EqualError(t, err, "run_unavailable: run "+end.Run+" has ended (completed): there is nothing to cancel")
	assert.Empty(t, e.Out.String())
	assert.Equal(t, end.Run, e.Factory.Outcome.Run, "its error names the run")
}

func TestCancelOfNoRun(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts := &Options{RunOptions: cmdutil.RunOptions{Common: e.Common(), RunArg: cmdutil.RunArg{Run: "20260101-000000-abcdef"}}}
	assert.EqualError(t, runCancel(opts), "invalid_request: no run 20260101-000000-abcdef in the state folder "+e.State)
	assert.Empty(t, e.Out.String())
}
