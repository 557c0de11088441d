package pull_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

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
