package sim_test

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/crw-dev/crw/engine/sim"
)

var (
	seeds = flag.Int("sim.seeds", 0, "run this many seeds from -sim.from (0: the fixed set)")
	from  = flag.Uint64("sim.from", 1, "the first seed -sim.seeds runs")
)

func TestSeeds(t *testing.T) {
	first, n := uint64(1), 40
	if *seeds > 0 {
		first, n = *from, *seeds
	}
	for s := first; s < first+uint64(n); s++ {
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			t.Parallel()
			c := sim.Generate(s)
			rep := sim.RunCase(context.Background(), c, t.TempDir())
			for _, v := range rep.Violations {
				t.Errorf("seed %d: %s", s, v)
			}
			if rep.Failed() && *keep != "" {
				v := rep.Violations[0].Invariant
				small := sim.Shrink(context.Background(), c, v, t.TempDir(), 3, 300)
				dir := filepath.Join(*keep, fmt.Sprintf("seed-%d-%s", s, v))
				if err := sim.Save(dir, small, sim.RunCase(context.Background(), small, t.TempDir())); err != nil {
					t.Error(err)
				}
				t.Logf("kept the shrunk case in %s", dir)
			}
			if rep.Failed() || testing.Verbose() {
				t.Logf("workflow:\n%s\nanswers: %s\nfaults: %+v\nactions: %v / %v\nfaulty rows:\n%s", c.Program.JS(), sim.AnswersFile(c.Answers), c.Faults, rep.Reference.Actions, rep.Faulty.Actions, sim.RowsText(rep.Faulty.Rows))
			}
		})
	}
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
				rep := sim.RunCase(context.Background(), c, t.TempDir())
				for _, v := range rep.Violations {
					t.Errorf("%s: %s", filepath.Base(dir), v)
				}
			}
		})
	}
}
