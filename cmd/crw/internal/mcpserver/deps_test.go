package mcpserver_test

import (
	"testing"

	"github.com/crw-dev/crw/internal/depstest"
)

const base = "github.com/crw-dev/crw/cmd/crw/internal/"

// TestDependenciesGoOneWay: the MCP server and the operations it shares with the command line
// never import the command line, and the operations not the MCP server (docs/architecture.md).
func TestDependenciesGoOneWay(t *testing.T) {
	t.Parallel()
	depstest.Forbid(t, map[string][]string{
		base + "mcpserver": {base + "cli"},
		base + "ops":       {base + "cli", base + "mcpserver", "github.com/modelcontextprotocol/go-sdk"},
	})
}

// TestPackagesGoOneWay: the server's packages import one way (docs/architecture.md): wire is a
// leaf, the transports and the request keys never reach the tools or the run service, and the
// tools never reach the server's bookkeeping or its transports.
func TestPackagesGoOneWay(t *testing.T) {
	t.Parallel()
	const srv = base + "mcpserver"
	depstest.Forbid(t, map[string][]string{
		srv + "/wire":    {srv + "/tools", srv + "/keys", srv + "/stdio", srv + "/mcphttp", base + "ops"},
		srv + "/keys":    {srv + "/tools", srv + "/stdio", srv + "/mcphttp", base + "ops"},
		srv + "/stdio":   {srv + "/tools", srv + "/keys", srv + "/mcphttp", base + "ops"},
		srv + "/mcphttp": {srv + "/tools", srv + "/keys", srv + "/stdio", base + "ops"},
		srv + "/tools":   {srv + "/keys", srv + "/stdio", srv + "/mcphttp"},
	})
}
