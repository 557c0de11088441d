package mcpserver_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
