//go:build crwplant

package killtest

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/crw-dev/crw/internal/plant"
)

// TestPlantedGitChildIsFound plants git_outlives_process in the crw processes of the kill tier
// (they inherit CRW_PLANT) and holds the tier to finding a git child that outlived its killed
// process. Seeds 1 to 12 each found it in a run of the tier on this machine, a few of them the
// same kill as the rest; the test takes the first seeds until one does.
func TestPlantedGitChildIsFound(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes on a repository of 10,000 files")
	}
	t.Setenv("CRW_PLANT", plant.GitOutlivesProcess)
	wfs := killWorkflows(t)
	for s := uint64(1); s <= 6; s++ {
		wf := wfs[s%uint64(len(wfs))]
		r := newKillRig(t, wf)
		r.rng = rand.New(rand.NewPCG(s, 0x6b696c6c))
		r.span = 5 * time.Second
		r.maxKill = 1 + r.rng.IntN(4)
		r.untilOrphan = true
		r.drive()
		if len(r.orphans) > 0 {
			t.Logf("seed %d (%s): found after %d kills: %v", s, wf.name, r.kills, r.orphans)
			return
		}
		t.Logf("seed %d (%s): no orphan in %d kills", s, wf.name, r.kills)
	}
	t.Errorf("%s planted: the kill tier found no git child that outlived its process in seeds 1 to 6 (CRW_PLANT=%s)", plant.GitOutlivesProcess, os.Getenv("CRW_PLANT"))
}
