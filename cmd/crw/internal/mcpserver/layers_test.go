package mcpserver_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPackagesGoOneWay: the server's packages import one way (docs/architecture.md): wire is a
// leaf, the transports and the request keys never reach the tools or the run service, and the
// tools never reach the server's bookkeeping or its transports.
func TestPackagesGoOneWay(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	const base = "github.com/crw-dev/crw/cmd/crw/internal/"
	const srv = base + "mcpserver"
	for pkg, forbidden := range map[string][]string{
		"wire":    {srv + "/tools", srv + "/keys", srv + "/stdio", srv + "/mcphttp", base + "ops"},
		"keys":    {srv + "/tools", srv + "/stdio", srv + "/mcphttp", base + "ops"},
		"stdio":   {srv + "/tools", srv + "/keys", srv + "/mcphttp", base + "ops"},
		"mcphttp": {srv + "/tools", srv + "/keys", srv + "/stdio", base + "ops"},
		"tools":   {srv + "/keys", srv + "/stdio", srv + "/mcphttp"},
	} {
		out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", srv+"/"+pkg).Output()
		require.NoError(t, err, pkg)
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				assert.False(t, dep == f || strings.HasPrefix(dep, f+"/"), "%s imports %s", pkg, dep)
			}
		}
	}
}
