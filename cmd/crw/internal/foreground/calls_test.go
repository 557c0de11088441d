package foreground

import (
	"bytes"
	"context"
	"fmt"
	"strings"
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

// TestAFollowOfARunNoProcessHoldsTellsItsLastProcess: a run that ended before the follow began
// is told as its last process left it: that process's calls and the workflow's lines from its
// start, in the order they were written, nothing of the process before it; past the bounds,
// its last 1,000 starts and ends and the workflow's last 1,000 lines, after a note of what
// is left out.
func TestAFollowOfARunNoProcessHoldsTellsItsLastProcess(t *testing.T) {
	t.Parallel()
	ctx, st, run, at := followedRun(t)
	write := func(rows ...*journal.Row) {
		lease, err := st.Acquire(ctx, run)
		require.NoError(t, err)
		_, err = lease.Journal().Write(rows...)
		require.NoError(t, err)
		require.NoError(t, lease.Release())
	}
	write(&journal.Row{Type: journal.TypeStarted, Run: run, At: at(0)},
		&journal.Row{Type: journal.TypePrepared, Call: "c1", Index: 1, Role: "reviewer", Node: "a", At: at(10)},
		&journal.Row{Type: journal.TypeCompleted, Call: "c1", At: at(20)},
		&journal.Row{Type: journal.TypePrepared, Call: "c3", Index: 3, Role: "critic", Node: "d", At: at(25)},
		&journal.Row{Type: journal.TypeEnded, Status: "paused", At: at(30)})
	write(&journal.Row{Type: journal.TypeStarted, Run: run, At: at(100)},
		&journal.Row{Type: journal.TypePrepared, Call: "c2", Index: 2, Role: "reviewer", Node: "b", At: at(110)},
		&journal.Row{Type: journal.TypeCompleted, Call: "c2", At: at(120)},
		&journal.Row{Type: journal.TypeCompleted, Call: "c3", At: at(127)}, // went on with: prepared before
		&journal.Row{Type: journal.TypeEnded, Status: "completed", At: at(130)})
	log := st.Log(run)
	for _, line := range []string{
		`{"at":"2026-12-01T10:00:00.025Z","kind":"console","level":"info","message":"first process"}`,
		`{"at":"2026-12-01T10:00:00.115Z","kind":"console","level":"info","message":"between"}`,
		`{"at":"2026-12-01T10:00:00.125Z","kind":"console","level":"info","message":"after c2"}`,
	} {
		require.NoError(t, log.Append([]byte(line+"\n")))
	}
	var out bytes.Buffer
	lastProcessLines(ctx, st, run, 10).readWith(newProgressLine(&out, false, false), log, 0)
	assert.Equal(t, "info: between\ncall c2 reviewer/b completed\ninfo: after c2\ncall c3 critic/d completed\n", out.String(),
		"c3, which the first process prepared, with its role and node")

	// A last process of 600 calls: its last 1,000 starts and ends.
	rows := []*journal.Row{{Type: journal.TypeStarted, Run: run, At: at(200)}}
	for i := 1; i <= 600; i++ {
		rows = append(rows, &journal.Row{Type: journal.TypePrepared, Call: fmt.Sprintf("c%d", 100+i), Index: 2 + i, Role: "critic", Node: "n", At: at(200 + 2*i)},
			&journal.Row{Type: journal.TypeCompleted, Call: fmt.Sprintf("c%d", 100+i), At: at(201 + 2*i)})
	}
	write(append(rows, &journal.Row{Type: journal.TypeEnded, Status: "completed", At: at(2000)})...)
	require.NoError(t, log.Append([]byte(`{"at":"2026-12-01T10:00:00.300Z","kind":"console","level":"info","message":"early in the last process"}`+"\n")))
	require.NoError(t, log.Append([]byte(`{"at":"2026-12-01T10:00:01.500Z","kind":"console","level":"info","message":"late in the last process"}`+"\n")))
	out.Reset()
	lastProcessLines(ctx, st, run, 0).readWith(newProgressLine(&out, false, false), log, 0)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	assert.Equal(t, "(200 earlier starts and ends of calls of this run's last process are left out: crw flow trace "+run+" has every row)", lines[0])
	assert.Equal(t, "info: early in the last process", lines[1], "the process's lines from its start, before the first call told")
	assert.Equal(t, "call c201 critic/n completed", lines[2], "the first call whose start is among the last 1,000")
	assert.Equal(t, "call c700 critic/n completed", lines[len(lines)-2])
	assert.Equal(t, "info: late in the last process", lines[len(lines)-1], "after the last call's end, as it was written")
	assert.Len(t, lines, 1+1+500+1, "the note, the early line, 500 calls' ends, the late line")

	// A last process that wrote 1,500 lines and made one call: its last 1,000 lines.
	write(&journal.Row{Type: journal.TypeStarted, Run: run, At: at(3000)},
		&journal.Row{Type: journal.TypePrepared, Call: "c800", Index: 700, Role: "critic", Node: "n", At: at(3001)},
		&journal.Row{Type: journal.TypeCompleted, Call: "c800", At: at(5000)},
		&journal.Row{Type: journal.TypeEnded, Status: "completed", At: at(5001)})
	for i := 1; i <= 1500; i++ {
		line := fmt.Sprintf(`{"at":%q,"kind":"console","level":"info","message":"line %d"}`, at(3001+i).Format(time.RFC3339Nano), i)
		require.NoError(t, log.Append([]byte(line+"\n")))
	}
	out.Reset()
	lastProcessLines(ctx, st, run, 0).readWith(newProgressLine(&out, false, false), log, 0)
	lines = strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	assert.Equal(t, "(500 earlier lines of the workflow of this run's last process are left out: crw flow logs "+run+" every line)", lines[0])
	assert.Equal(t, "info: line 501", lines[1])
	assert.Equal(t, "info: line 1500", lines[len(lines)-2])
	assert.Equal(t, "call c800 critic/n completed", lines[len(lines)-1])
	assert.Len(t, lines, 1+1000+1, "the note, the last 1,000 lines, the call's end")
}

// TestACallEndWithoutItsStartSaysNoRoleOrNode: a follow that did not read a call's start (it was
// prepared too far back) tells its end without a role and node it does not know.
func TestACallEndWithoutItsStartSaysNoRoleOrNode(t *testing.T) {
	var out bytes.Buffer
	p := newProgressLine(&out, false, false)
	p.event(progress.Event{Kind: progress.EventCallEnded, Call: "c1", Status: "completed"})
	p.event(progress.Event{Kind: progress.EventCallEnded, Call: "c2", Role: "critic", Node: "n", Status: "completed"})
	assert.Equal(t, "call c1 completed\ncall c2 critic/n completed\n", out.String())
}

// TestAFollowOfARunningRunBeginsWithItsProcess: a follow that begins while the run's process
// runs tells what that process did before (its calls and the workflow's lines from its start,
// nothing of the process before it), then what it writes on, each line once.
func TestAFollowOfARunningRunBeginsWithItsProcess(t *testing.T) {
	t.Parallel()
	ctx, st, run, at := followedRun(t)
	first, err := st.Acquire(ctx, run)
	require.NoError(t, err)
	_, err = first.Journal().Write(&journal.Row{Type: journal.TypeStarted, Run: run, At: at(0)},
		&journal.Row{Type: journal.TypePrepared, Call: "c1", Index: 1, Role: "reviewer", Node: "a", At: at(10)},
		&journal.Row{Type: journal.TypeHeld, Call: "c1", Reason: "engine_paused", At: at(20)},
		&journal.Row{Type: journal.TypeEnded, Status: "paused", At: at(30)})
	require.NoError(t, err)
	require.NoError(t, first.Release())
	lease, err := st.Acquire(ctx, run)
	require.NoError(t, err)
	defer lease.Release()
	_, err = lease.Journal().Write(&journal.Row{Type: journal.TypeStarted, Run: run, At: at(100)},
		&journal.Row{Type: journal.TypePrepared, Call: "c1", Index: 1, Role: "reviewer", Node: "a", At: at(110)},
		&journal.Row{Type: journal.TypeCompleted, Call: "c1", At: at(120)})
	require.NoError(t, err)
	log := st.Log(run)
	for _, line := range []string{
		`{"at":"2026-12-01T10:00:00.015Z","kind":"console","level":"info","message":"first process"}`,
		`{"at":"2026-12-01T10:00:00.121Z","kind":"console","level":"info","message":"c1 reviewed"}`,
	} {
		require.NoError(t, log.Append([]byte(line+"\n")))
	}

	var out bytes.Buffer
	prog := newProgressLine(&out, false, false)
	l := lastProcessLines(ctx, st, run, 0)
	logAt := l.readWith(prog, log, 0)
	assert.Equal(t, "call c1 reviewer/a completed\ninfo: c1 reviewed\n", out.String(), "the running process's calls and lines so far")

	out.Reset()
	_, err = lease.Journal().Write(&journal.Row{Type: journal.TypePrepared, Call: "c2", Index: 2, Role: "critic", Node: "b", At: at(130)},
		&journal.Row{Type: journal.TypeCompleted, Call: "c2", At: at(140)})
	require.NoError(t, err)
	require.NoError(t, log.Append([]byte(`{"at":"2026-12-01T10:00:00.141Z","kind":"console","level":"info","message":"c2 reviewed"}`+"\n")))
	l.readWith(prog, log, logAt)
	assert.Equal(t, "call c2 critic/b completed\ninfo: c2 reviewed\n", out.String(), "then what it writes on, once")
}

// followedRun is a run in a store of its own, and at(ms) the time ms after its start.
func followedRun(t *testing.T) (context.Context, store.Store, string, func(ms int) time.Time) {
	ctx := context.Background()
	st := mem.New()
	const run = "20260101-000000-abcdef"
	require.NoError(t, st.Create(ctx, &store.Spec{Schema: store.SpecSchema, Run: run, Workflow: "wf.js", Backend: "fake"}))
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	return ctx, st, run, func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
}
