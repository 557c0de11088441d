package sim_test

import (
	"testing"

	"github.com/crw-dev/crw/engine/sim"
	"github.com/crw-dev/crw/store/local"
)

// TestSeedsOnLocal runs the simulator's cases on the state folder's store (store/local: real
// bbolt journals, run locks, control sockets, each execution in a state folder of its own):
// the first seeds (-sim.seeds from -sim.from when given), each case with its faults (a
// process's lease lost right after a commit, in process: local.Store.CrashAfterCommit; stopped,
// paused, cancelled, answered, verdicts, commits) and without, checking the same invariants as
// on store/mem. It reaches what store/mem does not: a resume's History read on the journal its
// open to write has just checked (local.Store.AcquireReading).
func TestSeedsOnLocal(t *testing.T) {
	stores := func(dir string) (sim.Store, error) { return local.New(dir) }
	first, n := uint64(1), 32
	if *seeds > 0 {
		first, n = *from, *seeds
	}
	runSeeds(t, first, n, 4, stores)
}
