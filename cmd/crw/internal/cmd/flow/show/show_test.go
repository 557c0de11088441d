package show

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
)

func TestNewCmdShow(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdShow, "20260101-000000-abcdef", "c1")
	require.NoError(t, err)
	assert.Equal(t, []string{"20260101-000000-abcdef", "c1"}, opts.Args)
	assert.False(t, opts.HTML)
	assert.Equal(t, "0600", opts.Mode)
	assert.False(t, opts.ModeSet)

	opts, err = cmdtest.Parse(t, e, NewCmdShow, "--trace", "run.jsonl", "--html", "-o", "run.html", "--mode", "0644")
	require.NoError(t, err)
	assert.Empty(t, opts.Args)
	assert.True(t, opts.HTML)
	assert.Equal(t, "run.jsonl", opts.Trace)
	assert.Equal(t, "run.html", opts.Output)
	assert.Equal(t, "0644", opts.Mode)
	assert.True(t, opts.ModeSet)
}

func TestShowRefusesFlagsThatGoWithHTML(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{ModeSet: true, Mode: "0644"}, "invalid_request: --mode goes with --html -o FILE"},
		{Options{Follow: true, Args: []string{"x"}}, "invalid_request: -o and --follow go with --html"},
		{Options{}, "invalid_request: show: name the run"},
		{Options{HTML: true, Mode: "0600", Trace: "t.jsonl", Args: []string{"x"}}, "invalid_request: --trace draws a trace: name no run with it"},
		{Options{HTML: true, Mode: "0600"}, "invalid_request: show --html: name one run (or --trace FILE)"},
		{Options{HTML: true, Mode: "0600", Follow: true, Args: []string{"x"}}, "invalid_request: --follow rewrites a file: give -o FILE and a run"},
		{Options{HTML: true, Mode: "0400", Args: []string{"x"}}, "invalid_request: --mode 0400: an octal mode such as 0600 or 0644 that lets its owner read and write it"},
	} {
		e := cmdtest.New(t)
		o := c.opts
		o.Common = e.Common()
		assert.EqualError(t, runShow(&o), c.want)
	}
}

func TestShowOneCall(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)

	require.NoError(t, runShow(&Options{Common: e.Common(), Args: []string{end.Run, "c1"}}))
	assert.Equal(t, "call     c1 (#1) at "+e.Dir+"/wf.js:4:25\n"+
		"role     explorer\n"+
		"node     a\n"+
		"status   completed\n"+
		"thread   fake-c1 (fake-model, medium)\n"+
		"handle   crwh1:"+end.Run+":c1\n"+
		"turns    1 (repair used: false)\n"+
		"tokens   100 in, 20 out\n"+
		"prompt   look\n"+
		"output   {\"v\":\"hi\"}\n", e.Out.String())

	err := runShow(&Options{Common: e.Common(), Args: []string{end.Run, "c9"}})
	assert.EqualError(t, err, "invalid_request: run "+end.Run+` has no call "c9"`)
}
