package foreground

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

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
	say := func(_ time.Time, e progress.Event) {
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

// TestFollowPrintsCallsAndLinesInTheOrderTheyWereWritten: a follow that reads, in one go, calls
// that ended and the workflow's lines written between them prints them by when each was
// written (a line logged on c1's answer after c1's end, before c2's end), not all the calls
// first; a line written at the same instant as a call's end comes after it.
func TestFollowPrintsCallsAndLinesInTheOrderTheyWereWritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := mem.New()
	const run = "20260101-000000-abcdef"
	require.NoError(t, st.Create(ctx, &store.Spec{Schema: store.SpecSchema, Run: run, Workflow: "wf.js", Backend: "fake"}))
	lease, err := st.Acquire(ctx, run)
	require.NoError(t, err)
	defer lease.Release()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	_, err = lease.Journal().Write(&journal.Row{Type: journal.TypeStarted, Run: run, Backend: "fake", At: at(0)})
	require.NoError(t, err)
	l := newCallLines(ctx, st, run, 0)

	_, err = lease.Journal().Write(
		&journal.Row{Type: journal.TypePrepared, Call: "c1", Index: 1, Role: "reviewer", Node: "a", At: at(10)},
		&journal.Row{Type: journal.TypePrepared, Call: "c2", Index: 2, Role: "reviewer", Node: "b", At: at(11)},
		&journal.Row{Type: journal.TypeCompleted, Call: "c1", At: at(20)},
		&journal.Row{Type: journal.TypeCompleted, Call: "c2", At: at(40)})
	require.NoError(t, err)
	log := st.Log(run)
	for _, line := range []string{
		`{"at":"2026-12-01T10:00:00.020Z","kind":"console","level":"info","message":"a reviewed"}`,
		`{"at":"2026-12-01T10:00:00.030Z","kind":"console","level":"info","message":"between"}`,
		`{"at":"2026-12-01T10:00:00.050Z","kind":"console","level":"info","message":"both reviewed"}`,
	} {
		require.NoError(t, log.Append([]byte(line+"\n")))
	}
	var out bytes.Buffer
	prog := newProgressLine(&out, false, false)
	next := l.readWith(prog, log, 0)
	assert.Positive(t, next)
	// Without a terminal a call's start is not a line of its own.
	assert.Equal(t, "call c1 reviewer/a completed\ninfo: a reviewed\n"+
		"info: between\ncall c2 reviewer/b completed\ninfo: both reviewed\n", out.String())
}
