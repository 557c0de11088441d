package runner

import (
	"slices"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/runner/turns"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
)

// conversation is the journal's record of the continuation chain that ends with e: each
// call's task (its prepared row) and how it ended (its terminal row), oldest first. The rows
// are read again from the journal, made durable first, so a run keeps no prompt or answer of
// an ended call in memory.
func (r *runner) conversation(e *endedCall) ([]backend.Exchange, error) {
	var chain []*endedCall
	for x := e; x != nil; x = x.prev {
		chain = append(chain, x)
	}
	slices.Reverse(chain)
	if err := r.j.Sync(r.j.LastSeq()); err != nil {
		return nil, err
	}
	row := func(seq uint64, call string) (*journal.Row, error) {
		rows, err := r.j.Page(seq, 1)
		if err != nil {
			return nil, err
		}
		if len(rows) != 1 || rows[0].Call != call {
			return nil, errs.New(errs.IncompatibleSchema, "run %s: journal row %d of call %s cannot be read again", r.id, seq, call)
		}
		return &rows[0], nil
	}
	out := make([]backend.Exchange, 0, len(chain))
	for _, x := range chain {
		p, err := row(x.preparedSeq, x.id)
		if err != nil {
			return nil, err
		}
		ex := backend.Exchange{Call: x.id, Prompt: p.Prompt, Status: string(journal.StatusUnknown)}
		if x.endSeq != 0 {
			t, err := row(x.endSeq, x.id)
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
		rows, err := r.generationRows(x)
		if err != nil {
			return nil, err
		}
		ex.Turns, ex.Packet = turns.Conversation(p.Prompt, ex.Answer, rows)
		out = append(out, ex)
	}
	return out, nil
}

// generationRows reads a call's rows of its ended generation: from its prepared row to its
// terminal row, a page at a time.
func (r *runner) generationRows(x *endedCall) ([]journal.Row, error) {
	return r.rowsOf(x.id, x.preparedSeq, x.endSeq)
}

// rowsOf reads a call's rows from seq from to seq to (0: the journal's last), a page at a time.
func (r *runner) rowsOf(id string, from, to uint64) ([]journal.Row, error) {
	end := to
	if end == 0 {
		end = r.j.LastSeq()
	}
	var out []journal.Row
	for seq := from; seq <= end; {
		rows, err := r.j.Page(seq, int(min(end-seq+1, 512)))
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			break
		}
		for _, row := range rows {
			if row.Call == id && row.Seq <= end {
				out = append(out, row)
			}
		}
		seq = rows[len(rows)-1].Seq + 1
	}
	return out, nil
}
