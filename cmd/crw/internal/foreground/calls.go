package foreground

import (
	"context"
	"errors"
	"time"

	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// callLines are the calls of a followed run as its journal tells them from its last process's
// start (or after the follow began, when the journal does not say where that was): each start
// and each end, as crw flow run shows them, in the order they were written.
type callLines struct {
	ctx  context.Context
	st   store.Store
	run  string
	from uint64            // the next row to read
	open map[string]callOf // the calls started and not ended, by id
	// backlog bounds the starts and ends of calls, and the workflow's lines, the next read
	// gives when it tells a past process (0: no bound); logFrom is when that process started:
	// the workflow's lines before it are another process's.
	backlog int
	logFrom time.Time
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

// maxBacklog bounds the starts and ends of calls, and the workflow's lines, a follow prints of
// what the run's last process wrote before the follow began: the last ones of each.
const maxBacklog = 1000

// lastProcessLines tells run's calls from its last process's started row on, with the
// workflow's lines from that process's start: what a follow prints first, whether that process
// still runs or is gone (a run that ended before the follow began, one that paused or
// crashed). A journal whose summary does not say where that process began is told from the
// follow's start.
func lastProcessLines(ctx context.Context, st store.Store, run string, seq uint64) *callLines {
	sum, err := st.Summary(ctx, run)
	if err != nil || sum.LastStart == 0 {
		return newCallLines(ctx, st, run, seq)
	}
	l := &callLines{ctx: ctx, st: st, run: run, from: max(1, sum.LastStart-min(sum.LastStart, lookBack)), open: map[string]callOf{}, backlog: maxBacklog}
	// The calls an earlier process prepared and the last one went on with end in what is told
	// without a prepared row of their own there: their role and node are read from the rows
	// before (at most lookBack of them).
	_ = st.Rows(ctx, run, l.from, func(r *journal.Row) error {
		if r.Seq >= sum.LastStart {
			l.logFrom = r.At
			return errFirstRow
		}
		if r.Type == journal.TypePrepared {
			l.open[r.Call] = callOf{role: r.Role, node: r.Node}
		}
		return nil
	})
	l.from = sum.LastStart
	return l
}

// lookBack bounds the rows before the last process's start read for the calls it went on with.
const lookBack = 10000

var errFirstRow = errors.New("the first row is read")

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
