package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/runtime/loader"
)

// seed derives a run's random streams from its id, so a replay draws the same numbers.
func seed(runID, stream string) uint64 {
	h := sha256.Sum256([]byte("crw.seed.v1\x00" + stream + "\x00" + runID))
	return binary.BigEndian.Uint64(h[:8])
}

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

func (r *run) countsCopy() Counts {
	c := Counts{}
	for k, v := range r.counts {
		c[k] = v
	}
	return c
}

func (r *run) event(e Event) {
	r.mu.Lock()
	r.dirty = true
	if r.x.OnEvent == nil {
		r.mu.Unlock()
		return
	}
	e.Run = r.id
	e.Calls = r.countsCopy()
	e.InFlight = len(r.inflight)
	e.Tokens = r.spent
	r.mu.Unlock()
	r.x.OnEvent(e)
}

// Now implements the script's clock: the time of the last step the script has seen.
func (r *run) Now() time.Time { return r.clock }

// Random implements crw.random.
func (r *run) Random() float64 { return r.rng.Float64() }

// Log implements console and crw.log; lines are muted while the script replays what the
// journal recorded, as the earlier process printed them already.
func (r *run) Log(level, message string) {
	if r.replaying() {
		return
	}
	if level == "log" || level == "info" {
		fmt.Fprintln(r.x.Log, message)
		return
	}
	fmt.Fprintf(r.x.Log, "%s: %s\n", level, message)
}

// TierStep implements crw.tierStep.
func (r *run) TierStep(node string) error {
	r.mu.Lock()
	holder, held := r.holds[node]
	r.mu.Unlock()
	if held {
		return errs.Throw(errs.UnreconciledEffect, "recovery_hold", "crw.tierStep: node %q is in recovery_hold: call %s has an unknown outcome", node, holder)
	}
	return errTierStepNotSupported
}

var (
	errTierStepNotSupported = errs.Throw(errs.CapabilityUnavailable, "not_supported", "crw.tierStep is not supported yet")
	errCommitNotSupported   = errs.Throw(errs.CapabilityUnavailable, "not_supported", "crw.commit is not supported yet")
)

// Commit implements crw.commit.
func (r *run) Commit(node, message string) error {
	return errCommitNotSupported
}

// CheckSchema implements the strict check of schema modules.
func (r *run) CheckSchema(s []byte) []loader.Problem { return checkSchema(s) }

// checkedSchemas remembers the verdicts on schema texts: every run's load checks the same
// built-in schemas again.
var checkedSchemas sync.Map // string → []loader.Problem

func checkSchema(s []byte) []loader.Problem {
	if p, ok := checkedSchemas.Load(string(s)); ok {
		return p.([]loader.Problem)
	}
	p := strictProblems(s)
	checkedSchemas.Store(string(s), p)
	return p
}

func strictProblems(s []byte) []loader.Problem {
	vs, err := schema.CheckStrict(s)
	if err != nil {
		return []loader.Problem{{Rule: "invalid", Message: err.Error()}}
	}
	out := make([]loader.Problem, len(vs))
	for i, v := range vs {
		out[i] = loader.Problem{Pointer: v.Pointer, Rule: v.Rule, Message: v.Message}
	}
	return out
}
