package codex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/journal"
)

// TestRolloutTokensReadsOnlyARegularFile: a rollout path the host names that is a device, or a
// file with a line longer than the reader's buffer, is read without growing memory; the usage
// record after the long line is still found.
func TestRolloutTokensReadsOnlyARegularFile(t *testing.T) {
	u, ok := RolloutTokens("/dev/zero", "u1")
	assert.False(t, ok)
	assert.Equal(t, journal.Tokens{}, u)
	path := filepath.Join(t.TempDir(), "rollout.jsonl")
	record := `{"type":"token_usage_record","payload":{"turn_id":"u1","turn_token_usage":{"input_tokens":7,"output_tokens":2,"total_tokens":9}}}`
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("x", 1<<20)+"\n"+record+"\n"), 0o600))
	u, ok = RolloutTokens(path, "u1")
	assert.True(t, ok)
	assert.Equal(t, journal.Tokens{Total: 9, Input: 7, Output: 2}, u)
	_, ok = RolloutTokens(path, "u2")
	assert.False(t, ok, "no record of another turn")
}

func TestInfoKind(t *testing.T) {
	for raw, want := range map[string]string{
		`"usageLimitExceeded"`:                            "usageLimitExceeded",
		`{"httpConnectionFailed":{"httpStatusCode":502}}`: "httpConnectionFailed",
		`{"a":1,"b":2}`:                                   "",
		`null`:                                            "",
		``:                                                "",
	} {
		assert.Equal(t, want, InfoKind([]byte(raw)), raw)
	}
}
