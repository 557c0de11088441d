package store

import (
	"strings"
	"testing"
)

func TestValidKey(t *testing.T) {
	for key, want := range map[string]bool{
		"a": true, "A-b_c.d": true, "-x": true, "_": true, "9.9": true, "x.": true,
		strings.Repeat("k", 128): true, strings.Repeat("k", 129): false,
		"": false, ".x": false, "..": false, "a/b": false, "a b": false, "é": false, "a\x00": false, "a:b": false,
	} {
		if got := ValidKey(key); got != want {
			t.Errorf("ValidKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestTheStatesThatWaitForAProcess(t *testing.T) {
	for s, waits := range map[State]bool{StateQueued: true, StateCrashed: true, StateWaitingResume: true,
		StateRunning: false, StatePaused: false, StateWaitingDecision: false, StateEnded: false, StateStopped: false} {
		if s.WaitsForAProcess() != waits {
			t.Errorf("%q.WaitsForAProcess() = %v, want %v", s, s.WaitsForAProcess(), waits)
		}
	}
}

func TestAFinalRunStatusIsOneNoResumeGoesOnWith(t *testing.T) {
	for s, final := range map[RunStatus]bool{"": false, RunPaused: false, RunWaitingDecision: false,
		RunCompleted: true, RunFailed: true, RunCancelled: true} {
		if s.Final() != final {
			t.Errorf("%q.Final() = %v, want %v", s, s.Final(), final)
		}
	}
}
