package callstate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/callstate"
	"github.com/crw-dev/crw/journal"
)

// row is a row of call c1 written as "type" or "type/k".
func row(spec string) journal.Row {
	t, k, _ := strings.Cut(spec, "/")
	r := journal.Row{Type: t, Call: "c1"}
	if k != "" {
		r.K = int(k[0] - '0')
	}
	return r
}

func generation(specs ...string) []journal.Row {
	rows := []journal.Row{{Type: journal.TypePrepared, Call: "c1"}}
	for _, s := range specs {
		rows = append(rows, row(s))
	}
	for i := range rows {
		rows[i].Seq = uint64(i + 1)
	}
	return rows
}

// The ways calls go, on each backend, are transitions of the table.
func TestTheWaysCallsGo(t *testing.T) {
	for name, specs := range map[string][]string{
		"a task turn":                   {"thread_started", "turn_started/1", "completed"},
		"a repair":                      {"thread_started", "turn_started/1", "turn_started/2", "null_model"},
		"placed first":                  {"workspace_placed", "thread_started", "turn_started/1", "completed"},
		"refused at once":               {"refused"},
		"an applied verdict's effect":   {"completed"},
		"held at the gate":              {"held"},
		"interrupted while placed":      {"interrupt_requested", "workspace_placed", "held"},
		"interrupted in its turn":       {"thread_started", "turn_started/1", "interrupt_requested", "held"},
		"lost":                          {"thread_started", "turn_started/1", "outcome_unknown"},
		"a step bound":                  {"step_published/1", "thread_started", "turn_started/1", "completed"},
		"a step lost and published":     {"step_published/1", "thread_started", "turn_started/1", "session_attempt_lost", "step_published/1", "thread_started", "turn_started/1", "completed"},
		"a repair step":                 {"step_published/1", "thread_started", "turn_started/1", "step_published/2", "turn_started/2", "completed"},
		"a continuation's checkpoint":   {"checkpoint_started", "step_published/1", "thread_started", "turn_started/1", "completed"},
		"going on with its repair":      {"thread_started", "turn_started/2", "completed"},
		"warnings move nothing":         {"warning", "thread_started", "warning", "turn_started/1", "completed", "warning"},
		"a repair step bound elsewhere": {"workspace_placed", "step_published/2", "thread_started", "turn_started/2", "completed"},
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, callstate.Check(generation(specs...)))
		})
	}
}

// A row out of its place is an error naming the call, its state, the row and the way there.
func TestRowsOutOfPlace(t *testing.T) {
	for name, c := range map[string]struct {
		specs []string
		state callstate.State
		row   string
	}{
		"a repair before its task":     {[]string{"thread_started", "turn_started/2", "turn_started/1"}, callstate.RepairTurn, "turn_started k 1"},
		"a turn before its thread":     {[]string{"turn_started/1"}, callstate.Prepared, "turn_started k 1"},
		"a second task turn":           {[]string{"thread_started", "turn_started/1", "turn_started/1"}, callstate.TaskTurn, "turn_started k 1"},
		"a second thread":              {[]string{"thread_started", "thread_started"}, callstate.Threaded, "thread_started"},
		"placed after its thread":      {[]string{"thread_started", "workspace_placed"}, callstate.Threaded, "workspace_placed"},
		"a row after its end":          {[]string{"thread_started", "turn_started/1", "completed", "turn_started/2"}, callstate.Ended, "turn_started k 2"},
		"two ends":                     {[]string{"completed", "completed"}, callstate.Ended, "completed"},
		"superseded after held":        {[]string{"held", "superseded"}, callstate.Ended, "superseded"},
		"two interrupts":               {[]string{"interrupt_requested", "interrupt_requested"}, callstate.Prepared, "interrupt_requested"},
		"interrupted once it ended":    {[]string{"held", "interrupt_requested"}, callstate.Ended, "interrupt_requested"},
		"a lost attempt with no step":  {[]string{"thread_started", "session_attempt_lost"}, callstate.Threaded, "session_attempt_lost"},
		"a checkpoint after its steps": {[]string{"step_published/1", "checkpoint_started"}, callstate.TaskStep, "checkpoint_started"},
	} {
		t.Run(name, func(t *testing.T) {
			err := callstate.Check(generation(c.specs...))
			var te *callstate.ErrTransition
			require.True(t, errors.As(err, &te), "%v", err)
			assert.Equal(t, "c1", te.Call)
			assert.Equal(t, c.state, te.State)
			assert.Equal(t, c.row, te.Row)
			assert.Equal(t, "prepared", te.History[0])
			assert.Contains(t, err.Error(), "call c1: a "+c.row+" row is no transition from state "+c.state.String())
		})
	}
}

// A refused row leaves the machine as it was: the next row is judged from the same state.
func TestARefusedRowChangesNothing(t *testing.T) {
	m := callstate.New("c1")
	th := row("thread_started")
	require.NoError(t, m.Apply(&th))
	turn1 := row("turn_started/1")
	require.NoError(t, m.Apply(&turn1))
	again := row("thread_started")
	require.Error(t, m.Apply(&again))
	assert.Equal(t, callstate.TaskTurn, m.State())
	end := row("completed")
	require.NoError(t, m.Apply(&end))
	assert.Equal(t, callstate.Ended, m.State())
}

// A call's next generation starts where a resume starts one: after it was held, or where its
// process died; never after another end.
func TestGenerations(t *testing.T) {
	rows := generation("thread_started", "turn_started/1", "held")
	rows = append(rows, journal.Row{Type: journal.TypePrepared, Call: "c1", Seq: 5}, journal.Row{Type: journal.TypeThreadStarted, Call: "c1", Seq: 6},
		journal.Row{Type: journal.TypeTurnStarted, K: 1, Call: "c1", Seq: 7}, journal.Row{Type: journal.TypeCompleted, Call: "c1", Seq: 8})
	require.NoError(t, callstate.Check(rows))

	died := generation("thread_started", "interrupt_requested")
	died = append(died, journal.Row{Type: journal.TypePrepared, Call: "c1", Seq: 4}, journal.Row{Type: journal.TypeHeld, Call: "c1", Seq: 5})
	require.NoError(t, callstate.Check(died))

	done := generation("completed")
	done = append(done, journal.Row{Type: journal.TypePrepared, Call: "c1", Seq: 3})
	err := callstate.Check(done)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "row 3: call c1: a prepared row is no transition from state ended")

	orphan := []journal.Row{{Type: journal.TypeTurnStarted, K: 1, Call: "c9", Seq: 1}}
	assert.EqualError(t, callstate.Check(orphan), "row 1: call c9 has a turn_started k 1 row before its prepared row")
}
