package foreground

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

// TestFollowSaysTheCallsThatEndAfterItBegins: a follow begun while c1 is open names the calls
// the journal starts and ends after it began, each with its role and node (c1's from the index
// of open calls), as crw flow run does, and nothing of the rows before it; a read with nothing
// new says nothing.
func TestFollowSaysTheCallsThatEndAfterItBegins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := mem.New()
	const run = "20260101-000000-abcdef"
	require.NoError(t, st.Create(ctx, &store.Spec{Schema: store.SpecSchema, Run: run, Workflow: "wf.js", Backend: "fake"}))
	lease, err := st.Acquire(ctx, run)
	require.NoError(t, err)
	defer lease.Release()
	j := lease.Journal()
	_, err = j.Write(&journal.Row{Type: journal.TypeStarted, Run: run, Backend: "fake"},
		&journal.Row{Type: journal.TypePrepared, Call: "c0", Index: 1, Role: "architect", Node: "plan"},
		&journal.Row{Type: journal.TypeCompleted, Call: "c0"},
		&journal.Row{Type: journal.TypePrepared, Call: "c1", Index: 2, Role: "explorer", Node: "a"})
	require.NoError(t, err)

	l := newCallLines(ctx, st, run, 0)
	var said []string
	say := func(e progress.Event) {
		switch e.Kind {
		case progress.EventCallStarted:
			said = append(said, fmt.Sprintf("started %s %s/%s", e.Call, e.Role, e.Node))
		case progress.EventCallEnded:
			said = append(said, fmt.Sprintf("ended %s %s/%s %s %s", e.Call, e.Role, e.Node, e.Status, e.Reason))
		}
	}
	l.read(say)
	assert.Empty(t, said, "the rows before the follow are not said")

	_, err = j.Write(&journal.Row{Type: journal.TypePrepared, Call: "c2", Index: 3, Role: "reviewer", Node: "b"},
		&journal.Row{Type: journal.TypeCompleted, Call: "c1"},
		&journal.Row{Type: journal.TypeHeld, Call: "c2", Reason: "engine_paused"})
	require.NoError(t, err)
	l.read(say)
	l.read(say)
	assert.Equal(t, []string{"started c2 reviewer/b", "ended c1 explorer/a completed ", "ended c2 reviewer/b held engine_paused"}, said)
}
