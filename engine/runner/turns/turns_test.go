package turns_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/pull"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/runner/turns"
	"github.com/crw-dev/crw/journal"
)

var at = time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)

func row(seq uint64, typ string, k int) *journal.Row {
	return &journal.Row{Seq: seq, Type: typ, K: k, At: at.Add(time.Duration(seq) * time.Second)}
}

func TestSentSaysWhatAnEarlierProcessMayHaveSent(t *testing.T) {
	prepared := row(1, journal.TypePrepared, 0)
	assert.Nil(t, turns.Sent(nil, 1), "a call no process began")
	assert.Nil(t, turns.Sent(&replay.Call{Rows: &replay.Rows{Prepared: prepared}}, 1), "only prepared: nothing sent")

	threaded := &replay.Call{Rows: &replay.Rows{Prepared: prepared, Thread: row(2, journal.TypeThreadStarted, 0)}}
	assert.Equal(t, &pull.Sent{Sent: backend.Sent{At: at.Add(2 * time.Second)}}, turns.Sent(threaded, 1), "the task turn may have gone")
	assert.Nil(t, turns.Sent(threaded, 2))

	step := row(3, journal.TypeStepPublished, 1)
	step.Marker, step.Attempt = "m-2", 2
	lost := row(4, journal.TypeAttemptLost, 1)
	lost.Attempt, lost.Reason = 2, "subagent_closed"
	old := row(5, journal.TypeTurnStarted, 1)
	old.Marker, old.TurnID = "m-1", "turn-of-attempt-1"
	own := row(6, journal.TypeTurnStarted, 1)
	own.Marker, own.TurnID = "m-2", "turn-of-attempt-2"
	stepped := &replay.Call{Rows: &replay.Rows{Prepared: prepared, Thread: threaded.Thread, Steps: []*journal.Row{step}, Lost: []*journal.Row{lost},
		Turns: []*journal.Row{old, own}}}
	assert.Equal(t, &pull.Sent{Sent: backend.Sent{At: step.At, TurnID: "turn-of-attempt-2"}, Marker: "m-2", Attempt: 2, Lost: "subagent_closed"},
		turns.Sent(stepped, 1), "the step's own attempt's turn")
	stepped.Turns = []*journal.Row{old}
	assert.Equal(t, &pull.Sent{Sent: backend.Sent{At: step.At}, Marker: "m-2", Attempt: 2, Lost: "subagent_closed"},
		turns.Sent(stepped, 1), "an earlier attempt's turn is not the step's")

	first := row(7, journal.TypeTurnStarted, 1)
	first.TurnID = "t1"
	repairing := &replay.Call{Rows: &replay.Rows{Prepared: prepared, Thread: threaded.Thread, Turns: []*journal.Row{first}}}
	assert.Equal(t, &pull.Sent{Sent: backend.Sent{At: first.At}}, turns.Sent(repairing, 2), "the turn after a started one may have gone")
}

func TestCountedIsTheTokensTheNextStepPublished(t *testing.T) {
	step := row(3, journal.TypeStepPublished, 2)
	step.CallTokens = &journal.Tokens{Input: 10, Output: 5, Total: 15}
	rec := &replay.Call{Rows: &replay.Rows{Steps: []*journal.Row{row(2, journal.TypeStepPublished, 1), step}}}
	assert.Equal(t, &journal.Tokens{Input: 10, Output: 5, Total: 15}, turns.Counted(rec, 1))
	assert.Nil(t, turns.Counted(rec, 2))
	assert.Nil(t, turns.Counted(&replay.Call{Rows: &replay.Rows{Steps: []*journal.Row{row(2, journal.TypeStepPublished, 1)}}}, 1))
}

func TestAHeldGenerationGoesOnWithItsRepair(t *testing.T) {
	held := &replay.Call{Rows: &replay.Rows{}, Attempt: 1, EndReason: "engine_paused"}
	next := &journal.Row{Type: journal.TypePrepared}
	turns.GoOn(next, held, []journal.Row{*row(2, journal.TypeTurnStarted, 1)})
	assert.Equal(t, 0, next.K, "held in its task turn: it starts from the task")
	assert.Equal(t, "Generation 1 of this call stopped in its task turn: it was held (engine_paused). This one takes that turn again.", next.Note)

	repair := row(3, journal.TypeTurnStarted, 2)
	repair.Repair, repair.PreviousAnswer = "no JSON document", "about five"
	next = &journal.Row{Type: journal.TypePrepared}
	turns.GoOn(next, held, []journal.Row{*row(2, journal.TypeTurnStarted, 1), *repair})
	assert.Equal(t, 2, next.K)
	assert.Equal(t, "no JSON document", next.Repair)
	assert.Equal(t, "about five", next.PreviousAnswer)
	assert.Contains(t, next.Note, "stopped in its repair turn")
}

func TestTheConversationHasEachTurnOnceWithItsAnswer(t *testing.T) {
	repair := row(4, journal.TypeTurnStarted, 2)
	repair.Repair, repair.PreviousAnswer = "no JSON document", "about five"
	step := row(5, journal.TypeStepPublished, 2)
	step.Packet = "the packet"
	again := row(6, journal.TypeTurnStarted, 2) // the repair run again: once in the conversation
	again.Repair = "no JSON document"
	got, packet := turns.Conversation("count", `{"n":5}`, []journal.Row{*row(2, journal.TypeTurnStarted, 1), *repair, *step, *again})
	require.Len(t, got, 2)
	assert.Equal(t, []backend.ExchangeTurn{
		{K: 1, Prompt: "count", Answer: "about five"},
		{K: 2, Prompt: turns.RepairPrompt("no JSON document"), Answer: `{"n":5}`},
	}, got)
	assert.Equal(t, "the packet", packet)
}
