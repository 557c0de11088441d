// Package readback reads an ended call's rows back from its run's journal, which keeps no
// prompt, answer or thread of an ended call in memory: the conversation a continuation
// carries, the rows of a generation a held call's next one goes on from, and the thread of a
// call a replay delivered.
package readback

import (
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/pull"
	"github.com/crw-dev/crw/engine/runner/turns"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
)

// Journal is what reading back takes of a run's journal (store.Journal).
type Journal interface {
	Sync(seq uint64) error
	LastSeq() uint64
	Page(from uint64, limit int) ([]journal.Row, error)
}

// Link is one ended call of a continuation chain: where its prepared and terminal rows are
// (EndSeq 0: an outcome left unrecorded).
type Link struct {
	Call                string
	PreparedSeq, EndSeq uint64
}

// Conversation is the journal's record of a continuation chain, oldest first: each call's task
// (its prepared row) and how it ended (its terminal row). The rows are made durable first.
func Conversation(j Journal, run string, chain []Link) ([]backend.Exchange, error) {
	if err := j.Sync(j.LastSeq()); err != nil {
		return nil, err
	}
	out := make([]backend.Exchange, 0, len(chain))
	for _, x := range chain {
		rows, err := Rows(j, x.Call, x.PreparedSeq, x.EndSeq)
		if err != nil {
			return nil, err
		}
		// Its prepared and terminal rows are among its rows, read once.
		at := func(seq uint64) (*journal.Row, error) {
			for i := range rows {
				if rows[i].Seq == seq {
					return &rows[i], nil
				}
			}
			return nil, errs.New(errs.IncompatibleSchema, "run %s: journal row %d of call %s cannot be read again", run, seq, x.Call)
		}
		p, err := at(x.PreparedSeq)
		if err != nil {
			return nil, err
		}
		ex := backend.Exchange{Call: x.Call, Prompt: p.Prompt, Status: string(journal.StatusUnknown)}
		if x.EndSeq != 0 {
			t, err := at(x.EndSeq)
			if err != nil {
				return nil, err
			}
			ex.Status = string(journal.StatusOf(t.Type))
			switch {
			case t.RawText != nil:
				ex.Answer = *t.RawText
			case t.Output != nil:
				ex.Answer = string(t.Output)
			}
		}
		ex.Turns, ex.Packet = turns.Conversation(p.Prompt, ex.Answer, rows)
		out = append(out, ex)
	}
	return out, nil
}

// Rows reads a call's rows from seq from to seq to (0: the journal's last), a page at a time.
func Rows(j Journal, call string, from, to uint64) ([]journal.Row, error) {
	end := to
	if end == 0 {
		end = j.LastSeq()
	}
	var out []journal.Row
	for seq := from; seq <= end; {
		rows, err := j.Page(seq, int(min(end-seq+1, 512)))
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			break
		}
		for _, row := range rows {
			if row.Call == call && row.Seq <= end {
				out = append(out, row)
			}
		}
		seq = rows[len(rows)-1].Seq + 1
	}
	return out, nil
}

// EndedThread is the thread of an ended call's generation, from its prepared to its terminal
// row, read back once they are durable; the zero Thread when it had none.
func EndedThread(j Journal, call string, preparedSeq, endSeq uint64) (backend.Thread, error) {
	var th backend.Thread
	if preparedSeq == 0 || endSeq < preparedSeq {
		return th, nil
	}
	if err := j.Sync(endSeq); err != nil {
		return th, err
	}
	rows, err := Rows(j, call, preparedSeq, endSeq)
	if err != nil {
		return th, err
	}
	for i := range rows {
		if rows[i].Type == journal.TypeThreadStarted {
			th = Thread(&rows[i])
		}
	}
	return th, nil
}

// Thread is the thread a thread_started row records, with a pull backend's binding when it
// has one: the thread a backend is handed again.
func Thread(row *journal.Row) backend.Thread {
	t := row.AsThreadStarted()
	th := backend.Thread{ID: t.ThreadID, Model: t.Model, Effort: t.Effort, Cwd: t.Cwd, RolloutPath: t.RolloutPath}
	if b := pull.ReadBind(row); b != nil {
		th.Bind = b
	}
	return th
}
