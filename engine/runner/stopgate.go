package runner

import (
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// stopGate is the lease's journal as a stopping process writes it: once the run stops for a
// reason it cannot go on with (a divergence, a failed journal, a lost lease, its caller), not
// one more row is written, as if the process had died there. Rows a stop would cause (a call
// waiting on the pool, ended held cancelled) would tell a resume the calls had ended when they
// had not.
type stopGate struct {
	store.Journal
	stopped func() error
}

func (g stopGate) Append(rows ...*journal.Row) uint64 {
	if g.stopped() != nil {
		return 0
	}
	return g.Journal.Append(rows...)
}

func (g stopGate) Sync(seq uint64) error {
	if err := g.stopped(); err != nil {
		return err
	}
	return g.Journal.Sync(seq)
}

func (g stopGate) Write(rows ...*journal.Row) (uint64, error) {
	if err := g.stopped(); err != nil {
		return 0, err
	}
	return g.Journal.Write(rows...)
}
