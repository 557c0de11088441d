package check

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
)

func TestNewCmdCheck(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdCheck, "schema.json")
	require.NoError(t, err)
	assert.Equal(t, "schema.json", opts.File)
}

func TestCheckAStrictSchema(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	file := e.File(t, "s.json", `{"type": "object", "additionalProperties": false, "required": ["v"], "properties": {"v": {"type": "string"}}}`)
	require.NoError(t, runCheck(&Options{Common: e.Common(), File: file}))
	assert.Equal(t, file+": strict\n", e.Out.String())

	e.Out.Reset()
	e.JSON = true
	require.NoError(t, runCheck(&Options{Common: e.Common(), File: file}))
	assert.Equal(t, `{"file":"`+file+`","strict":true,"violations":[]}`+"\n", e.Out.String())
}

func TestCheckASchemaThatIsNotStrict(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	file := e.File(t, "s.json", `{"type": "object", "properties": {"v": {"type": "string"}}}`)
	assert.Equal(t, cmdutil.Failed, runCheck(&Options{Common: e.Common(), File: file}))
	assert.Contains(t, e.Out.String(), file+": ")
	assert.Equal(t, file+": not strict: 2 violation(s)\n", e.ErrOut.String())

	err := runCheck(&Options{Common: e.Common(), File: e.File(t, "bad.json", "{")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid_request: "+e.Dir+"/bad.json: ")
}
