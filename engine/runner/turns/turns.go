// Package turns is what a call's turns are made of beyond the backend's reply: the repair
// turn's text, what an earlier process of the run sent and counted of each turn, where a held
// generation goes on from, and the conversation turns a call's rows give.
package turns

import (
	"fmt"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/pull"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/journal"
)

// Sent tells whether turn k of a call an earlier process left open may have been
// dispatched, and what the journal recorded of it (with the step a pull backend published for
// it). A backend dispatches a turn only after the
// rows before it are durable, so a recorded step or turn of k says so, a last row of
// thread_started means the task turn may have gone, and a last turn_started k means turn k+1
// may have.
func Sent(rec *replay.Call, k int) *pull.Sent {
	if rec == nil {
		return nil
	}
	var sent *pull.Sent
	attempt := 0
	for _, st := range rec.Steps {
		if st.K == k {
			sent, attempt = &pull.Sent{Sent: backend.Sent{At: st.At}, Marker: st.Marker, Attempt: st.Attempt}, st.Attempt
		}
	}
	for _, l := range rec.Lost {
		if sent != nil && l.K == k && l.Attempt == attempt {
			sent.Lost = l.Reason
		}
	}
	for _, t := range rec.Turns {
		// A turn of the step's own attempt: an earlier attempt's turn is not this step's.
		if t.K == k && (sent == nil || sent.Marker == "" || t.Marker == sent.Marker) {
			if sent == nil {
				sent = &pull.Sent{Sent: backend.Sent{At: t.At}}
			}
			sent.TurnID = t.TurnID
		}
	}
	if sent != nil {
		return sent
	}
	last := rec.LastRow()
	switch {
	case k == 1 && last.Type == journal.TypeThreadStarted:
		return &pull.Sent{Sent: backend.Sent{At: last.At}}
	case k == 2 && last.Type == journal.TypeTurnStarted && last.K == 1:
		return &pull.Sent{Sent: backend.Sent{At: last.At}}
	}
	return nil
}

// Counted is what an earlier process counted for the call's turn k, when it published a
// step for the turn after it: that step's call_tokens (seed 003). nil when it did not.
func Counted(rec *replay.Call, k int) *journal.Tokens {
	if rec == nil || k != 1 {
		return nil
	}
	for _, st := range rec.Steps {
		if st.K == 2 {
			var t journal.Tokens
			if st.CallTokens != nil {
				t = *st.CallTokens
			}
			return &t
		}
	}
	return nil
}

// RepairPrompt is the one repair turn's text: it names what was wrong with the answer.
func RepairPrompt(problem string) string {
	return "Your previous answer could not be accepted: " + problem + ".\n" +
		"Answer the same task again. Reply with exactly one JSON document that satisfies the output schema, and nothing before or after it."
}

// GoOn marks the prepared row of a held call's next generation with where the held one
// stopped, from the held generation's rows: the repair it was in (k 2, the problem and the
// answer repaired), so the new generation goes on with that repair and has no second one, and
// a note of why the earlier attempt stopped, which a pull backend's packet gives. A held
// generation that never reached its repair, or whose rows do not name the answer it repaired,
// starts from its task.
func GoOn(row *journal.Row, held *replay.Call, rows []journal.Row) {
	turn, previous := "task", ""
	for _, t := range rows {
		if t.Type == journal.TypeStepPublished && t.K == 2 && previous == "" {
			previous = t.PreviousAnswer
		}
		if t.Type != journal.TypeTurnStarted || t.K != 2 {
			continue
		}
		if t.PreviousAnswer != "" {
			previous = t.PreviousAnswer
		}
		if previous != "" {
			row.K, row.Repair, row.PreviousAnswer, turn = 2, t.Repair, previous, "repair"
		}
	}
	row.Note = fmt.Sprintf("Generation %d of this call stopped in its %s turn: it was held (%s). This one takes that turn again.", held.Attempt, turn, held.EndReason)
}

// Conversation is a call's conversation turns as its turn_started rows give them, each
// turn once (a turn run again replaces the one it names), repairs included, each with its
// answer: a repair's row names the answer it repairs, and the call's final answer is its last
// turn's. It returns the packet of the call's last step too.
func Conversation(task, final string, rows []journal.Row) ([]backend.ExchangeTurn, string) {
	byK := map[int]*backend.ExchangeTurn{}
	packet := ""
	for _, row := range rows {
		switch row.Type {
		case journal.TypeStepPublished:
			packet = row.Packet
		case journal.TypeTurnStarted:
			k := max(row.K, row.ConversationTurn, 1)
			t := &backend.ExchangeTurn{K: k, Prompt: task}
			if k == 2 {
				t.Prompt = RepairPrompt(row.Repair)
				if prev := byK[1]; prev != nil && row.PreviousAnswer != "" {
					prev.Answer = row.PreviousAnswer
				}
			}
			byK[k] = t
		}
	}
	turns := make([]backend.ExchangeTurn, 0, len(byK))
	for k := 1; k <= 2; k++ {
		if t := byK[k]; t != nil {
			turns = append(turns, *t)
		}
	}
	if n := len(turns); n > 0 {
		turns[n-1].Answer = final
	}
	return turns, packet
}
