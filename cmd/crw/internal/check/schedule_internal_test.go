package check

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestASeedIsItsSchedule: a schedule's choices are functions of its seed and the call's issue
// order alone; a call without a schema is never made invalid; across many seeds every fault
// comes up about as often as the others, and about half the schedules crash.
func TestASeedIsItsSchedule(t *testing.T) {
	t.Parallel()
	counts := map[Fault]int{}
	crashes := 0
	for seed := uint64(1); seed <= 2000; seed++ {
		s := Schedule{Seed: seed}
		for call := 1; call <= 5; call++ {
			f := s.FaultOf(call, true)
			assert.Equal(t, f, Schedule{Seed: seed}.FaultOf(call, true))
			counts[f]++
			text := s.FaultOf(call, false)
			assert.NotContains(t, []Fault{FaultRepair, FaultNullModel}, text, "a text answer cannot be invalid")
		}
		if at := s.CrashAt(10); at > 0 {
			crashes++
			assert.Less(t, at, uint64(10), "never after the run's last commit")
		}
		assert.Zero(t, s.CrashAt(1), "a run of one commit has no commit to crash after but its last")
	}
	assert.InDelta(t, 5000, counts[FaultValid], 250, "half the calls answer validly")
	for _, f := range schemaFaults {
		assert.InDelta(t, 1000, counts[f], 150, "%s", f)
	}
	assert.InDelta(t, 1000, crashes, 100)
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "no fault", Describe(nil, 0))
	assert.Equal(t, "call 1 null_model, call 3 lost; crash after commit 4",
		Describe([]Injected{{1, FaultNullModel}, {3, FaultLost}}, 4))
}
