package mcpserver_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/mcptest"
)

// TestDocsDescribeEveryTool: docs/mcp.md has a section for each tool that names each of its
// inputs and its answer's member.
func TestDocsDescribeEveryTool(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	data, err := os.ReadFile(filepath.Join(mcptest.Repo(t), "docs", "mcp.md"))
	require.NoError(t, err)
	doc := string(data)
	for _, name := range r.Listed {
		_, section, ok := strings.Cut(doc, "\n### "+name+"\n")
		if !assert.True(t, ok, "docs/mcp.md has no section %s", name) {
			continue
		}
		section, _, _ = strings.Cut(section, "\n### ")
		section = strings.Join(strings.Fields(section), " ")
		tool := r.Tools[name]
		var in, out struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		data, _ := json.Marshal(tool.InputSchema)
		require.NoError(t, json.Unmarshal(data, &in))
		for member := range in.Properties {
			assert.Contains(t, section, "`"+member+"`", "docs/mcp.md, %s: the input %s", name, member)
		}
		data, _ = json.Marshal(tool.OutputSchema)
		require.NoError(t, json.Unmarshal(data, &out))
		for member := range out.Properties {
			if member != "error" {
				assert.Contains(t, section, "Output `"+member+"`", "docs/mcp.md, %s: the answer's member", name)
			}
		}
	}
}

// TestDocsCodexEntriesParse: each config.toml example of docs/mcp.md is TOML with an
// [mcp_servers.crw] entry that runs crw mcp, or reaches it at a url with a token's variable.
func TestDocsCodexEntriesParse(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(mcptest.Repo(t), "docs", "mcp.md"))
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?ms)^```toml\n(.*?)^```\n").FindAllStringSubmatch(string(data), -1)
	require.Len(t, blocks, 2)
	for _, b := range blocks {
		var cfg struct {
			MCPServers map[string]struct {
				Command                  string   `toml:"command"`
				Args                     []string `toml:"args"`
				URL                      string   `toml:"url"`
				BearerTokenEnvVar        string   `toml:"bearer_token_env_var"`
				DefaultToolsApprovalMode string   `toml:"default_tools_approval_mode"`
			} `toml:"mcp_servers"`
		}
		_, err := toml.Decode(b[1], &cfg)
		require.NoError(t, err, b[1])
		crw, ok := cfg.MCPServers["crw"]
		require.True(t, ok, b[1])
		assert.Equal(t, "approve", crw.DefaultToolsApprovalMode)
		if crw.URL == "" {
			require.NotEmpty(t, crw.Args, b[1])
			assert.Equal(t, "mcp", crw.Args[0])
		} else {
			assert.Equal(t, "CRW_MCP_TOKEN", crw.BearerTokenEnvVar)
		}
	}
}
