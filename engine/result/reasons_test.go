package result_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/result"
	"github.com/crw-dev/crw/lib/types"
)

// TestReasonUnionIsTheClosedSet: the Reason union `crw types` writes for crw:agent is exactly
// the closed set the engine's journal checks hold every terminal row to, in its order.
func TestReasonUnionIsTheClosedSet(t *testing.T) {
	files, err := types.Files()
	require.NoError(t, err)
	var src []byte
	for name, b := range files {
		if regexp.MustCompile(`(^|/)agent\.d\.ts$`).MatchString(name) {
			src = b
		}
	}
	require.NotNil(t, src, "crw types writes no agent.d.ts")
	decl := regexp.MustCompile(`(?s)export type Reason =(.*?);`).FindSubmatch(src)
	require.NotNil(t, decl, "agent.d.ts declares no Reason union")
	var union []string
	for _, m := range regexp.MustCompile(`"([a-z_]+)"`).FindAllSubmatch(decl[1], -1) {
		union = append(union, string(m[1]))
	}
	assert.Equal(t, result.Reasons, union)
	assert.Contains(t, union, "host_config_workspace", "the fake backend's refusal of files in a call without a directory")
	assert.True(t, result.IsReason("recovery_hold"))
	assert.False(t, result.IsReason("host_config_"))
}
