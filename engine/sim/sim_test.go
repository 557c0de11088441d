package sim_test

import (
	"context"
	"flag"
	"fmt"
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
			if rep.Failed() || testing.Verbose() {
				t.Logf("workflow:\n%s\nanswers: %s\nfaults: %+v\nactions: %v / %v\nfaulty rows:\n%s", c.Program.JS(), sim.AnswersFile(c.Answers), c.Faults, rep.Reference.Actions, rep.Faulty.Actions, sim.RowsText(rep.Faulty.Rows))
			}
		})
	}
}
