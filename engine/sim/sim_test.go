package sim_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crw-dev/crw/engine/sim"
	"github.com/crw-dev/crw/internal/enginetest"
)

var (
	seeds = flag.Int("sim.seeds", 0, "run this many seeds from -sim.from (0: the fixed set)")
	from  = flag.Uint64("sim.from", 1, "the first seed -sim.seeds runs")
	limit = flag.Duration("sim.time", 0, "with -sim.seeds: start no seed after this long (0: run them all)")
)

// TestSeeds runs the fixed seeds, or -sim.seeds from -sim.from (for -sim.time at most), a few
// at a time (-parallel), each case with its faults and without.
func TestSeeds(t *testing.T) {
	first, n := uint64(1), 60
	if *seeds > 0 {
		first, n = *from, *seeds
	}
	runSeeds(t, first, n, runtime.GOMAXPROCS(0)*3, sim.MemStore)
}

// runSeeds runs n seeds from first (for -sim.time at most), workers at a time, on the stores
// stores makes, and logs what they did.
func runSeeds(t *testing.T, first uint64, n, workers int, stores func(string) (sim.Store, error)) {
	began := time.Now()
	next := make(chan uint64)
	var ran atomic.Int64
	var fig figures
	tmp := simTmp(t)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range next {
				done := ran.Add(1)
				fig.add(runSeedOn(t, tmp, s, stores))
				if *seeds > 0 && done%1000 == 0 {
					// A long run says how far it got, so one stopped early still has figures.
					t.Logf("progress: %d seeds started by %v (the newest %d); %s", done, time.Since(began).Round(time.Second), s, fig.String())
				}
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
	t.Logf("seeds from %d: %d run in %v; %s", first, ran.Load(), time.Since(began).Round(time.Second), fig.String())
}

// figures add up what the seeds' runs did, for the long runs' reports.
type figures struct {
	mu                               sync.Mutex
	runs, processes, crashes, failed int
	actions                          map[string]int
	violations                       map[string]int
}

func (f *figures) add(rep *sim.Report) {
	if rep == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.actions == nil {
		f.actions, f.violations = map[string]int{}, map[string]int{}
	}
	for _, o := range []*sim.Outcome{rep.Reference, rep.Faulty} {
		f.runs++
		f.processes += o.Processes
		f.crashes += o.Crashes
		for _, a := range o.Actions {
			kind, _, _ := strings.Cut(a, " ")
			f.actions[kind]++
		}
	}
	if rep.Failed() {
		f.failed++
	}
	for _, v := range rep.Violations {
		f.violations[v.Invariant]++
	}
}

func (f *figures) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("%d runs, %d processes, %d crashed, actions %v, %d seeds failed %v",
		f.runs, f.processes, f.crashes, f.actions, f.failed, f.violations)
}

// simTmp is where a test's cases run: in memory when the machine has room (see FastTmp), as
// git's checkouts of a scratch repository of some size take seconds on a slow disk.
func simTmp(t *testing.T) string { return enginetest.FastTmp(t, "CRW_SIM_TMP", "crw-sim-") }

// runSeedOn runs a seed's case on the stores that stores makes.
func runSeedOn(t *testing.T, tmp string, s uint64, stores func(string) (sim.Store, error)) *sim.Report {
	c := sim.Generate(s)
	dir, err := os.MkdirTemp(tmp, "sim-")
	if err != nil {
		t.Error(err)
		return nil
	}
	defer os.RemoveAll(dir)
	rep := sim.RunCaseOn(context.Background(), c, dir, stores)
	for _, v := range rep.Violations {
		t.Errorf("seed %d: %s", s, v)
	}
	if !rep.Failed() {
		return rep
	}
	t.Logf("seed %d: workflow:\n%s\nanswers: %s\nfaults: %+v\nactions: %v / %v\nfaulty rows:\n%s", s, c.Program.JS(), sim.AnswersFile(c.Answers), c.Faults,
		rep.Reference.Actions, rep.Faulty.Actions, sim.RowsText(rep.Faulty.Rows))
	if *keep != "" {
		v := rep.Violations[0].Invariant
		small := sim.Shrink(context.Background(), c, v, dir, 3, 200)
		// A folder's name without ':' (reference:state): Go modules and some systems refuse it.
		kept := filepath.Join(*keep, fmt.Sprintf("seed-%d-%s", s, strings.ReplaceAll(v, ":", "-")))
		if err := sim.Save(kept, small, sim.RunCase(context.Background(), small, filepath.Join(dir, "kept"))); err != nil {
			t.Error(err)
		}
		t.Logf("seed %d: kept the shrunk case in %s", s, kept)
	}
	return rep
}

var keep = flag.String("sim.keep", "", "shrink the failing seeds and keep each minimal case in this folder (testdata/sim)")

// TestKeptCases replays every minimal case the simulator found and kept in testdata/sim: each
// broke an invariant once, and must never again.
func TestKeptCases(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "sim", "*", "case.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no kept case in testdata/sim")
	}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			c, err := sim.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			// A case that broke an invariant by timing is run a few times.
			for i := 0; i < 3; i++ {
				rep := sim.RunCase(context.Background(), c, simTmp(t))
				for _, v := range rep.Violations {
					t.Errorf("%s: %s", filepath.Base(dir), v)
				}
			}
		})
	}
}
