package check_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/check"
)

// faultFindings are a report's findings of the faults pass: where, what, and under which
// schedule.
func faultFindings(rep *check.Report) []string {
	var out []string
	for _, f := range rep.Findings {
		if f.Source != "faults" {
			continue
		}
		out = append(out, fmt.Sprintf("%s:%d:%d %s seed %d: %s", filepath.Base(f.File), f.Line, f.Col, f.Rule,
			f.Schedule.Seed, check.Describe(f.Schedule.Faults, f.Schedule.CrashAfterCommit)))
	}
	return out
}

func checkFaults(t *testing.T, wf string, n int, seed uint64) *check.Report {
	t.Helper()
	rep, err := check.Check(context.Background(), check.Options{Workflow: filepath.Join("testdata", wf), Faults: n, Seed: seed})
	require.NoError(t, err)
	require.NotNil(t, rep.Faults)
	assert.Equal(t, n, rep.Faults.Schedules)
	assert.Equal(t, seed, rep.Faults.Seed)
	return rep
}

// TestAnUncheckedStatusIsFoundUnderFaults: the plain rehearsal answers every call validly and
// finds nothing; the schedules that make the plan call null_model, refused, rate limited or
// lost find the read of .output.steps at its line and column, each with its seed and faults.
func TestAnUncheckedStatusIsFoundUnderFaults(t *testing.T) {
	t.Parallel()
	rep := checkFaults(t, "unguarded.js", 30, check.DefaultSeed)
	assert.Equal(t, "completed", rep.Status, "the plain rehearsal ends")
	found := faultFindings(rep)
	assert.Contains(t, found, "unguarded.js:6:31 thrown seed 24: call 1 null_model")
	assert.Contains(t, found, "unguarded.js:6:31 thrown seed 2: call 1 refused")
	assert.Contains(t, found, "unguarded.js:6:31 thrown seed 12: call 1 rate_limited")
	assert.Contains(t, found, "unguarded.js:6:31 thrown seed 19: call 1 lost")
	assert.Len(t, found, len(rep.Faults.Misbehaved), "one finding a schedule")
	for _, f := range rep.Findings {
		assert.Equal(t, "TypeError: Cannot read property 'steps' of undefined", f.Message)
	}
	assert.Equal(t, []uint64{2, 4, 12, 19, 20, 24, 25, 30}, rep.Faults.Misbehaved)
}

// TestASeedReproducesItsSchedule: --seed S rehearses schedule S alone and finds what it found
// among the others, with the same faults.
func TestASeedReproducesItsSchedule(t *testing.T) {
	t.Parallel()
	for range 3 {
		rep := checkFaults(t, "unguarded.js", 1, 24)
		assert.Equal(t, []string{"unguarded.js:6:31 thrown seed 24: call 1 null_model"}, faultFindings(rep))
		assert.Equal(t, []uint64{24}, rep.Faults.Misbehaved)
	}
	rep := checkFaults(t, "unguarded.js", 1, 23)
	assert.Empty(t, rep.Findings, "schedule 23 answers the plan validly")
}

// TestAWorkflowThatGuardsEveryStatusIsClean: a workflow that looks at each status before it
// reads an output, and waits for the verdict on a lost answer, passes every schedule: faults,
// pauses, verdicts and crashes alike, crw.decide answered from its schema on each resume.
func TestAWorkflowThatGuardsEveryStatusIsClean(t *testing.T) {
	t.Parallel()
	rep := checkFaults(t, "guarded.js", 50, check.DefaultSeed)
	assert.Empty(t, rep.Findings)
	assert.Empty(t, rep.Faults.Misbehaved)
	assert.Equal(t, 3, rep.Calls)
	assert.Greater(t, rep.Faults.Crashed, 15, "about half the schedules crash and resume")
}

func TestTheShippedWorkflowsPassTwentyFaultSchedules(t *testing.T) {
	t.Parallel()
	for _, wf := range []string{"plan-build-review.js", "triage.ts", "build-commit.js"} {
		start := time.Now()
		rep, err := check.Check(context.Background(), check.Options{Workflow: filepath.Join("../../../../workflows", wf), Faults: 20, Seed: check.DefaultSeed})
		require.NoError(t, err, wf)
		assert.Empty(t, rep.Findings, wf)
		assert.Empty(t, rep.Faults.Misbehaved, wf)
		t.Logf("%s: 20 schedules in %s", wf, time.Since(start).Round(time.Millisecond))
	}
}

// TestAWorkflowThatNeverReturnsIsNamedAtItsLastCall: a workflow that, when its call did not
// complete, waits for a promise nothing settles is found under the schedules that fault that
// call, at the call after which it waits.
func TestAWorkflowThatNeverReturnsIsNamedAtItsLastCall(t *testing.T) {
	t.Parallel()
	rep := checkFaults(t, "waits.js", 10, check.DefaultSeed)
	assert.Equal(t, []string{
		"waits.js:4:28 never_returned seed 2: call 1 lost",
		"waits.js:4:28 never_returned seed 4: call 1 lost",
	}, faultFindings(rep))
	assert.Contains(t, rep.Findings[0].Message, "the workflow never returned")
	assert.Contains(t, rep.Findings[0].Message, "after this call ended unknown")
}

// TestAResultThatDependsOnACrashIsFound: everything a workflow reads is journaled and read
// back on a resume, except the time the resume took: a time budget read off crw.now() is
// spent by a crash while the second call is under way (the resumed process finds the turn on
// the host and waits for it), and not without the crash. Schedule 9 crashes there.
func TestAResultThatDependsOnACrashIsFound(t *testing.T) {
	// The budget is 20 ms, the least the resume waits for the turn it finds on the host; on a
	// machine so busy that a call without the crash takes as long, the check rightly finds
	// nothing, so it is given three tries.
	rep := checkFaults(t, "clock.js", 1, 9)
	for try := 1; try < 3 && len(rep.Findings) == 0; try++ {
		rep = checkFaults(t, "clock.js", 1, 9)
	}
	assert.Equal(t, []string{"clock.js:9:30 crash_dependent seed 9: no fault; crash after commit 3"}, faultFindings(rep))
	require.NotEmpty(t, rep.Findings)
	assert.Equal(t, "the workflow's result differs at .overBudget: true after a crash and a resume, false without the crash; the crash came while this call was under way", rep.Findings[0].Message)
}

// TestACrashAloneChangesNothingElse: a workflow whose result holds every CallResult whole
// (thread ids, turn ids, tokens), crw.random() and a decision returns the same after a crash
// as without one, under every schedule.
func TestACrashAloneChangesNothingElse(t *testing.T) {
	t.Parallel()
	rep := checkFaults(t, "recorded.js", 40, check.DefaultSeed)
	assert.Empty(t, rep.Findings)
	assert.Greater(t, rep.Faults.Crashed, 10)
}

// TestNoScheduleRunsAfterTheRehearsalStoppedShort: a workflow the plain rehearsal stopped at
// its call cap would stop each schedule there too: none is rehearsed, and the report says so.
func TestNoScheduleRunsAfterTheRehearsalStoppedShort(t *testing.T) {
	t.Parallel()
	forever := filepath.Join(t.TempDir(), "forever.js")
	require.NoError(t, os.WriteFile(forever, []byte(`import { agent } from "crw:agent";
export default async function main() { for (;;) await agent.call({ role: "explorer", prompt: "again" }); }
`), 0o644))
	rep, err := check.Check(context.Background(), check.Options{Workflow: forever, MaxCalls: 10, Faults: 20})
	require.NoError(t, err)
	assert.Equal(t, "the rehearsal stopped after 10 calls (--max-calls); no fault schedule was rehearsed", rep.Stopped)
	assert.Equal(t, 0, rep.Faults.Schedules)
	assert.Empty(t, rep.Findings)
}
