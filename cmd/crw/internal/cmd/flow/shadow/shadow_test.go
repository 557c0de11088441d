package shadow

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
)

func TestNewCmdShadow(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdShadow, "edited.js", "--run", "20260101-000000-abcdef", "--lib", "a", "--lib", "b")
	require.NoError(t, err)
	assert.Equal(t, "edited.js", opts.Script)
	assert.Equal(t, "20260101-000000-abcdef", opts.Run)
	assert.Empty(t, opts.Trace)
	assert.Equal(t, []string{"a", "b"}, opts.LibDirs)

	opts, err = cmdtest.Parse(t, e, NewCmdShadow, "edited.js", "--trace", "t.jsonl")
	require.NoError(t, err)
	assert.Equal(t, "t.jsonl", opts.Trace)
	assert.Empty(t, opts.Run)
}

func TestShadowNeedsOneRecord(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	for _, o := range []Options{{Script: "a.js"}, {Script: "a.js", Run: "r", Trace: "t.jsonl"}} {
		o.Common = e.Common()
		assert.EqualError(t, runShadow(&o), "invalid_request: give exactly one of --run RUN and --trace FILE")
	}
}

func TestShadowOfTheSameScript(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	script := e.File(t, "same.js", cmdtest.OneCall)
	require.NoError(t, runShadow(&Options{Common: e.Common(), Script: script, Run: end.Run}))
	assert.Equal(t, "shadow of "+script+" against run "+end.Run+" (backend fake)\n"+
		"1 of 1 recorded calls matched; 0 divergence(s), 0 never made, 0 new\n"+
		"\nresult: {\"v\":\"hi\"}\n", e.Out.String())
	assert.Equal(t, end.Run, e.Factory.Outcome.Run)
}

func TestShadowOfAChangedScriptExits1(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	e.JSON = true
	script := e.File(t, "changed.js", "export default async function main() { return 2; }\n")
	err := runShadow(&Options{Common: e.Common(), Script: script, Run: end.Run})
	assert.Equal(t, cmdutil.Failed, err)
	assert.Contains(t, e.Out.String(), `"recorded":1,"matched":0,"divergences":[],"unmade":[{"position":1,"call":"c1","role":"explorer","node":"a","prompt":"look",`)
	assert.Contains(t, e.Out.String(), `"status":"completed","result":2,"error":null}`)
}
