package sim_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crw-dev/crw/engine/sim"
	"github.com/crw-dev/crw/internal/etcdtest"
	"github.com/crw-dev/crw/store/etcd"
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
		return etcd.Open(ctx, cli, prefix, etcd.WithHostDir(dir), etcd.WithTTL(etcd.MinTTL))
	}
	first, n := uint64(1), 16
	if *seeds > 0 {
		first, n = *from, *seeds
	}
	began := time.Now()
	tmp := simTmp(t)
	var fig figures
	next := make(chan uint64)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range next {
				fig.add(runSeedOn(t, tmp, s, stores))
			}
		}()
	}
	for s := first; s < first+uint64(n); s++ {
		if *limit > 0 && time.Since(began) > *limit {
			break
		}
		next <- s
	}
	close(next)
	wg.Wait()
	t.Logf("seeds from %d on etcd, in %v; %s", first, time.Since(began).Round(time.Second), fig.String())
}
