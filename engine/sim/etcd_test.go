package sim_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crw-dev/crw/engine/sim"
	"github.com/crw-dev/crw/internal/etcdtest"
	"github.com/crw-dev/crw/store/etcd"
	"github.com/crw-dev/crw/store/etcd/cluster"
)

// TestSeedsOnEtcd runs the simulator's cases on a store on a real etcd cluster (3 members):
// the first seeds (-sim.seeds from -sim.from when given), each case with its faults (a process
// killed right after a commit, stopped, paused, cancelled, answered, verdicts, commits) and
// without, every execution under a prefix of its own, and checks the same invariants as on
// store/mem.
func TestSeedsOnEtcd(t *testing.T) {
	c := etcdtest.Start(t, 3)
	cli := c.Client(t)
	var execution atomic.Int64
	stores := func(dir string) (sim.Store, error) {
		prefix := fmt.Sprintf("/sim/%d", execution.Add(1))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return etcd.Open(ctx, cli, prefix, etcd.WithHostDir(dir), etcd.WithTTL(cluster.MinTTL))
	}
	first, n := uint64(1), 16
	if *seeds > 0 {
		first, n = *from, *seeds
	}
	runSeeds(t, first, n, 4, stores)
}
