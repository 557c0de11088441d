package version

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	info := Info{Version: "v1.2.3", Commit: "abc", Go: "go1.26", Goja: "v0.0.1", Codex: "0.99"}
	require.NoError(t, runVersion(&Options{Common: e.Common(), Info: info}))
	assert.Equal(t, "crw v1.2.3 (abc)\ngo1.26, goja v0.0.1, Codex app-server protocol 0.99\n", e.Out.String())

	e.Out.Reset()
	e.JSON = true
	require.NoError(t, runVersion(&Options{Common: e.Common(), Info: info}))
	assert.Equal(t, `{"version":"v1.2.3","commit":"abc","go":"go1.26","goja":"v0.0.1","codex_protocol":"0.99"}`+"\n", e.Out.String())

	opts, err := cmdtest.Parse(t, e, NewCmdVersion)
	require.NoError(t, err)
	assert.Equal(t, Build(), opts.Info)
}
