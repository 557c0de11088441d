package pull_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/pull"
	"github.com/crw-dev/crw/journal"
)

// TestABindIsReadBackFromItsRow: what a bind writes into its thread's row is the bind read back
// from that row; a thread no pull backend bound has none, in its row or on the thread.
func TestABindIsReadBackFromItsRow(t *testing.T) {
	b := &pull.Bind{Via: "session", HostCwd: "/w", ParentThreadID: "owner", AgentRole: "crw-reviewer", Marker: "c1/t1-a2", Attempt: 2,
		PairCheck: "effort_unchecked", PriorPairs: []journal.Pair{{Model: "m", Effort: "low"}}}
	row := &journal.Row{Type: journal.TypeThreadStarted, ThreadID: "t1"}
	var binding backend.Binding = b
	binding.Row(row)
	assert.Equal(t, b, pull.ReadBind(row))
	assert.Equal(t, b, pull.BindOf(backend.Thread{ID: "t1", Bind: b}))

	assert.Nil(t, pull.ReadBind(&journal.Row{Type: journal.TypeThreadStarted, ThreadID: "t2"}))
	assert.Nil(t, pull.BindOf(backend.Thread{ID: "t2"}))
}

func TestAStepIsItsPublishedRow(t *testing.T) {
	st := pull.Step{Marker: "c1/t1-a2", Op: "c1/t1", Attempt: 2, Action: "spawn", Input: "do it", Packet: "steps/c1.md",
		PacketDigest: "sha256:p", Role: "explorer", AgentType: "explorer", Model: "m", Effort: "low", Workspace: "/w",
		CallTokens: journal.Tokens{Input: 3, Output: 2, Total: 5}}
	got, err := json.Marshal(st.Row("c1", 1))
	require.NoError(t, err)
	assert.JSONEq(t, `{"seq":0,"at":"0001-01-01T00:00:00Z","type":"step_published","call":"c1","k":1,"marker":"c1/t1-a2","op":"c1/t1",
		"attempt":2,"action":"spawn","input":"do it","input_digest":"sha256:f51c362d5cc7defb17b2b1290bb8e9b5a4d7e1319f85b90741ff3f8578fc6bba",
		"packet":"steps/c1.md","packet_digest":"sha256:p","role":"explorer","agent_type":"explorer","model":"m","effort":"low",
		"workspace":"/w","call_tokens":{"input":3,"output":2,"total":5}}`, string(got))
}
