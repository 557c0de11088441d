package mcpserver_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDependenciesGoOneWay: the MCP server and the operations it shares with the command line
// never import the command line, and the operations not the MCP server (docs/architecture.md).
func TestDependenciesGoOneWay(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	const base = "github.com/crw-dev/crw/cmd/crw/internal/"
	for pkg, forbidden := range map[string][]string{
		"mcpserver": {base + "cli"},
		"ops":       {base + "cli", base + "mcpserver", "github.com/modelcontextprotocol/go-sdk"},
	} {
		out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", base+pkg).Output()
		require.NoError(t, err, pkg)
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				assert.False(t, dep == f || strings.HasPrefix(dep, f+"/"), "%s imports %s", pkg, dep)
			}
		}
	}
}
