package types

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
)

func TestNewCmdTypes(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdTypes)
	require.NoError(t, err)
	assert.Equal(t, ".", opts.Dir, "the current folder")

	opts, err = cmdtest.Parse(t, e, NewCmdTypes, "workflows")
	require.NoError(t, err)
	assert.Equal(t, "workflows", opts.Dir)
}

func TestTypesWritesTheDeclarationsAndATsconfig(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	require.NoError(t, runTypes(&Options{Common: e.Common(), Dir: e.Dir}))
	assert.Contains(t, e.Out.String(), "wrote "+filepath.Join(e.Dir, "tsconfig.json")+"\n")
	assert.Contains(t, e.Out.String(), "wrote "+filepath.Join(e.Dir, "crw-types", "crw.d.ts")+"\n")
	assert.FileExists(t, filepath.Join(e.Dir, "tsconfig.json"))

	e.Out.Reset()
	e.JSON = true
	require.NoError(t, runTypes(&Options{Common: e.Common(), Dir: e.Dir}))
	assert.Contains(t, e.Out.String(), `{"dir":"`+e.Dir+`","files":["crw-types/`)
	assert.Contains(t, e.Out.String(), `"tsconfig":"tsconfig.json"}`)
}

func TestTypesLeavesTheUsersTsconfig(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	mine := e.File(t, "tsconfig.json", `{"compilerOptions": {}}`)
	e.JSON = true
	require.NoError(t, runTypes(&Options{Common: e.Common(), Dir: e.Dir}))
	assert.Contains(t, e.Out.String(), `"tsconfig.crw.json"],"tsconfig":"tsconfig.crw.json","note":"your tsconfig.json is left as it is: add \"extends\": \"./tsconfig.crw.json\" to it"}`)
	data, err := os.ReadFile(mine)
	require.NoError(t, err)
	assert.Equal(t, `{"compilerOptions": {}}`, string(data))
}

func TestTypesOfNoFolder(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	file := e.File(t, "a.js", "")
	assert.EqualError(t, runTypes(&Options{Common: e.Common(), Dir: file}), "invalid_request: crw types: "+file+" is not a folder")
	assert.Empty(t, e.Out.String())
}
