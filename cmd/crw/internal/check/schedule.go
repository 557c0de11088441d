package check

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Fault is what a schedule does to one call.
type Fault string

// The faults a schedule injects. A call without a schema answers text, which no answer makes
// invalid: it never gets repair or null_model.
const (
	FaultValid     Fault = "valid"        // a valid answer, synthesized from its schema
	FaultRepair    Fault = "repair"       // an invalid answer, then a valid one on the repair turn
	FaultNullModel Fault = "null_model"   // two invalid answers: the call ends null_model
	FaultRefused   Fault = "refused"      // the host refuses the turn (badRequest)
	FaultRateLimit Fault = "rate_limited" // a rate limit pauses the run; its new attempt answers
	FaultLost      Fault = "lost"         // the answer is lost: the call ends unknown
)

var (
	schemaFaults = []Fault{FaultRepair, FaultNullModel, FaultRefused, FaultRateLimit, FaultLost}
	textFaults   = []Fault{FaultRefused, FaultRateLimit, FaultLost}
)

// DefaultSeed is the seed of the first schedule when --seed is not given: the same schedules
// on every machine, so a check that passed in CI passes on a laptop.
const DefaultSeed = 1

// Schedule is one fault schedule: every choice it makes is a function of its seed and of the
// call's issue order, so the same seed injects the same faults in any process of a run.
type Schedule struct {
	Seed uint64
}

// What each draw is for: the same seed draws independently for each.
const (
	drawDensity = iota + 1
	drawFaulted
	drawKind
	drawVerdict
	drawCrash
	drawCrashAt
)

// draw is a number the seed gives for one purpose and one call.
func (s Schedule) draw(purpose, index uint64) uint64 {
	return splitmix(s.Seed ^ splitmix(purpose<<32|index))
}

// splitmix is SplitMix64's finalizer: a well-mixed 64-bit hash.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// FaultOf is what the schedule does to the call issued index-th. A schedule faults a quarter,
// half or three quarters of its calls, so some schedules fault a few calls and others many.
func (s Schedule) FaultOf(index int, hasSchema bool) Fault {
	density := 1 + s.draw(drawDensity, 0)%3 // in quarters
	if s.draw(drawFaulted, uint64(index))%4 >= density {
		return FaultValid
	}
	kinds := textFaults
	if hasSchema {
		kinds = schemaFaults
	}
	return kinds[s.draw(drawKind, uint64(index))%uint64(len(kinds))]
}

// Applied is the verdict the rehearsal gives on a lost call: applied (with an output
// synthesized from its schema) or not_applied.
func (s Schedule) Applied(index int) bool { return s.draw(drawVerdict, uint64(index))%2 == 0 }

// CrashAt is the commit after which the schedule's process crashes, in a run that makes
// commits commits in all (0: it does not crash). Half the schedules crash, never after the
// last commit (the run's end), where a crash changes nothing.
func (s Schedule) CrashAt(commits uint64) uint64 {
	if commits < 2 || s.draw(drawCrash, 0)%2 != 0 {
		return 0
	}
	return 1 + s.draw(drawCrashAt, 0)%(commits-1)
}

// Injected is a fault a schedule injected: which call (its 1-based issue order) got what.
type Injected struct {
	Call  int   `json:"call"`
	Fault Fault `json:"fault"`
}

// injections collects the faults injected into one run, across its processes.
type injections struct {
	mu     sync.Mutex
	byCall map[int]Fault
}

func (in *injections) note(index int, f Fault) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.byCall == nil {
		in.byCall = map[int]Fault{}
	}
	in.byCall[index] = f
}

// list is the faults injected other than valid answers, by call.
func (in *injections) list() []Injected {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := []Injected{}
	for c, f := range in.byCall {
		if f != FaultValid {
			out = append(out, Injected{Call: c, Fault: f})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

// Describe says what a schedule did in a few words: "call 1 null_model, call 3 lost; crash
// after commit 4".
func Describe(faults []Injected, crashAt uint64) string {
	parts := make([]string, 0, len(faults))
	for _, f := range faults {
		parts = append(parts, fmt.Sprintf("call %d %s", f.Call, f.Fault))
	}
	s := strings.Join(parts, ", ")
	if s == "" {
		s = "no fault"
	}
	if crashAt > 0 {
		s += fmt.Sprintf("; crash after commit %d", crashAt)
	}
	return s
}
