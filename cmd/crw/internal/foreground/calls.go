package foreground

import (
	"context"
	"time"

	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// callLines are the calls of a followed run as its journal tells them after the follow began:
// each start and each end, as crw flow run shows them, in the order they were written.
type callLines struct {
	ctx  context.Context
	st   store.Store
	run  string
	from uint64            // the next row to read
	open map[string]callOf // the calls started and not ended, by id
}

type callOf struct{ role, node string }

// maxOpenSeed bounds the open calls read when the follow begins, whose ends it then names.
const maxOpenSeed = 10000

// newCallLines follows run's calls from the rows written after the follow began (the journal's
// summary says which; seq, a holder's published account, when it cannot be read); the calls
// open by then are known from the index the journal's writer keeps, not from its rows.
func newCallLines(ctx context.Context, st store.Store, run string, seq uint64) *callLines {
	if sum, err := st.Summary(ctx, run); err == nil {
		seq = sum.LastSeq
	}
	l := &callLines{ctx: ctx, st: st, run: run, from: seq + 1, open: map[string]callOf{}}
	if out, err := st.Outstanding(ctx, run, maxOpenSeed); err == nil {
		for _, c := range out.Open {
			l.open[c.Call] = callOf{role: c.Role, node: c.Node}
		}
	}
	return l
}

// read gives event each call's start and end written since the last read, with when its row
// was written. A journal that cannot be read now is read again at the next change: the lines
// are a view, the run's end is said all the same.
func (l *callLines) read(event func(time.Time, progress.Event)) {
	_ = l.st.Rows(l.ctx, l.run, l.from, func(r *journal.Row) error {
		l.from = r.Seq + 1
		switch {
		case r.Type == journal.TypePrepared:
			l.open[r.Call] = callOf{role: r.Role, node: r.Node}
			event(r.At, progress.Event{Kind: progress.EventCallStarted, Call: r.Call, Role: r.Role, Node: r.Node})
		case journal.IsTerminal(r.Type) && r.Call != "":
			c := l.open[r.Call]
			delete(l.open, r.Call)
			event(r.At, progress.Event{Kind: progress.EventCallEnded, Call: r.Call, Role: c.role, Node: c.node, Status: journal.StatusOf(r.Type), Reason: r.Reason})
		}
		return nil
	})
}
