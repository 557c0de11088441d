package check

import (
	"os"
	"path/filepath"
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

func TestCheckASchemaModule(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	require.NoError(t, os.MkdirAll(filepath.Join(e.Dir, "lib", "schemas"), 0o755))
	file := e.File(t, "lib/schemas/review.ts", `export const ok = { type: "object", additionalProperties: false, required: ["v"], properties: { v: { type: "string" } } };
export const loose = { type: "object" };
export function helper() { return ok; }
`)
	e.JSON = true
	assert.Equal(t, cmdutil.Failed, runCheck(&Options{Common: e.Common(), File: file}))
	assert.Equal(t, `{"file":"`+file+`","strict":false,"violations":[{"export":"loose","pointer":"","rule":"additional_properties","message":"objects must set \"additionalProperties\": false"}]}`+"\n", e.Out.String())

	e.Out.Reset()
	e.JSON = false
	strict := e.File(t, "lib/schemas/ok.js", `export const ok = { type: "object", additionalProperties: false, required: ["v"], properties: { v: { type: "string" } } };`)
	require.NoError(t, runCheck(&Options{Common: e.Common(), File: strict}))
	assert.Equal(t, strict+": strict\n", e.Out.String())

	err := runCheck(&Options{Common: e.Common(), File: e.File(t, "loose.js", `export const a = {};`)})
	assert.EqualError(t, err, "invalid_request: "+e.Dir+"/loose.js: a schema module is a file of a schemas folder of a lib folder (lib/schemas/NAME.ts, served as crw:lib/schemas/NAME)")
}
