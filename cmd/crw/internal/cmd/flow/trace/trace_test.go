package trace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
)

func TestNewCmdTrace(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdTrace, "20260101-000000-abcdef")
	require.NoError(t, err)
	assert.Equal(t, "20260101-000000-abcdef", opts.Run)
	assert.Empty(t, opts.Output)
	assert.Equal(t, "0600", opts.Mode)
	assert.False(t, opts.ModeSet)

	opts, err = cmdtest.Parse(t, e, NewCmdTrace, "20260101-000000-abcdef", "-o", "t.jsonl", "--mode", "0644")
	require.NoError(t, err)
	assert.Equal(t, "t.jsonl", opts.Output)
	assert.Equal(t, "0644", opts.Mode)
	assert.True(t, opts.ModeSet)
}

func TestTraceToStdout(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	require.NoError(t, runTrace(&Options{Common: e.Common(), Run: end.Run}))
	lines := strings.Split(strings.TrimSuffix(e.Out.String(), "\n"), "\n")
	assert.Contains(t, lines[0], `"format":"crw-trace/1"`)
	assert.Contains(t, lines[0], `"run":"`+end.Run+`"`)
	require.Len(t, lines, 7, "the header and the run's six rows")
	assert.Contains(t, lines[1], `{"seq":1,"type":"started",`)
	assert.Contains(t, lines[6], `{"seq":6,"type":"ended",`)
	assert.Equal(t, end.Run, e.Factory.Outcome.Run)
}

func TestTraceToAFile(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	out := filepath.Join(e.Dir, "t.jsonl")
	e.JSON = true
	require.NoError(t, runTrace(&Options{Common: e.Common(), Run: end.Run, Output: out, Mode: "0640", ModeSet: true}))
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, 7, strings.Count(string(data), "\n"), "the header and the run's six rows")
	assert.Equal(t, `{"file":"`+out+`","rows":6,"run":"`+end.Run+`"}`+"\n", e.Out.String())
	fi, err := os.Stat(out)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
}

func TestTraceRefusals(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{Mode: "0644", ModeSet: true}, "invalid_request: --mode goes with --output FILE"},
		{Options{Output: "-", Mode: "0644", ModeSet: true}, "invalid_request: --mode goes with --output FILE"},
		{Options{Output: filepath.Join(e.State, "x.jsonl"), Mode: "0600"}, "invalid_request: --output " + filepath.Join(e.State, "x.jsonl") + ": inside the state folder " + e.State + ", whose files only crw writes; write the trace elsewhere"},
		{Options{Output: filepath.Join(e.Dir, "y.jsonl"), Mode: "0400"}, "invalid_request: --mode 0400: an octal mode such as 0600 or 0644 that lets its owner read and write it"},
	} {
		o := c.opts
		o.Common, o.Run = e.Common(), end.Run
		assert.EqualError(t, runTrace(&o), c.want)
	}
	assert.Empty(t, e.Out.String())
	assert.NoFileExists(t, filepath.Join(e.Dir, "y.jsonl"))
}
