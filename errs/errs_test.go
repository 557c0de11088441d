package errs_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/errs"
)

// TestCodesAreTheContracts: the codes users see are exactly seed 002's, plus seed 003's
// run_env_unusable and crw's workflow_failed, each with its fixed message.
func TestCodesAreTheContracts(t *testing.T) {
	t.Parallel()
	want := []string{
		"invalid_request", "invalid_authority", "owner_mismatch", "insufficient_scope", "incompatible_schema",
		"revision_conflict", "idempotency_conflict", "agent_unavailable", "brief_unavailable", "run_unavailable",
		"session_busy", "workflow_busy", "schedule_busy", "event_trigger_busy", "connection_unavailable",
		"capability_unavailable", "budget_exhausted", "approval_expired", "unreconciled_effect", "run_env_unusable",
		"workflow_failed",
	}
	got := make([]string, len(errs.Codes))
	for i, c := range errs.Codes {
		got[i] = string(c)
		assert.NotEmpty(t, c.Message(), c)
		assert.NotEmpty(t, c.SafeResponse(), c)
		assert.True(t, c.Known(), c)
	}
	assert.Equal(t, want, got)
	assert.Equal(t, "The Run cannot accept the requested operation.", errs.RunUnavailable.Message())
	assert.Equal(t, "An equivalent provider effect has an unknown outcome.", errs.UnreconciledEffect.Message())
	assert.Equal(t, "Use the original exact request, or a new key for genuinely new intent.", errs.IdempotencyConflict.SafeResponse())
	assert.False(t, errs.Code("divergence").Known())
	assert.Empty(t, errs.Code("divergence").SafeResponse())
}

// TestADiagnosticIsNeverHalfEmpty: a diagnostic has a phase, a reason and one of the documented
// dispositions, whoever made it.
func TestADiagnosticIsNeverHalfEmpty(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"not_started", "stopped", "held", "unknown"}, errs.Dispositions)

	e := errs.New(errs.RunUnavailable, "run r is over").Next("crw flow show r")
	assert.Equal(t, errs.Diagnostic{CorrelationID: e.Diagnostic.CorrelationID, Certainty: "certain", Phase: "request",
		Reason: "run_unavailable", Disposition: "not_started", NextAction: "crw flow show r"}, *e.Diagnostic)

	e = errs.New(errs.RevisionConflict, "x").Because("", "", "refused", errs.Certain)
	assert.Equal(t, "request", e.Diagnostic.Phase)
	assert.Equal(t, "revision_conflict", e.Diagnostic.Reason)
	assert.Equal(t, "unknown", e.Diagnostic.Disposition, "a disposition outside the documented ones says unknown")
	assert.Equal(t, errs.Uncertain, e.Diagnostic.Certainty)

	e = errs.New(errs.RunUnavailable, "x").Because("lease", "lease_lost", "stopped", errs.Uncertain)
	assert.Equal(t, "lease/lease_lost/stopped/uncertain",
		e.Diagnostic.Phase+"/"+e.Diagnostic.Reason+"/"+e.Diagnostic.Disposition+"/"+string(e.Diagnostic.Certainty))
}

func TestBoundCutsAtOneKiBAndSaysHowMuch(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "short", errs.Bound("short"))
	exact := strings.Repeat("a", errs.MaxDetail)
	assert.Equal(t, exact, errs.Bound(exact))

	long := strings.Repeat("é", 3000) // 6000 bytes, two per rune
	got := errs.Bound(long)
	assert.LessOrEqual(t, len(got), errs.MaxDetail)
	assert.True(t, utf8.ValidString(got), "cut at a rune boundary")
	m := regexp.MustCompile(`… \((\d+) more bytes cut\)$`).FindStringSubmatch(got)
	require.NotNil(t, m, got[len(got)-40:])
	kept := len(strings.TrimSuffix(got, m[0]))
	assert.Equal(t, fmt.Sprint(6000-kept), m[1], "the count is what was cut")
}

func TestErrorShapeAndCause(t *testing.T) {
	t.Parallel()
	cause := errors.New("journal: commit rows 4-5: write /x: no space left on device")
	e := errs.New(errs.CapabilityUnavailable, "run %s: its journal cannot be written", "r1").
		Wrap(cause).Because("journal", "journal_write_failed", "stopped", errs.Certain).Next("free disk space, then crw flow resume r1")
	assert.Equal(t, "capability_unavailable (journal_write_failed): run r1: its journal cannot be written", e.Error())
	assert.True(t, errors.Is(e, cause), "the cause is kept for the log")
	assert.Equal(t, "journal_write_failed", e.Reason())
	assert.Regexp(t, `^crw-[0-9a-f]{16}$`, e.Diagnostic.CorrelationID)

	data, err := json.Marshal(e)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "no space left", "the cause never reaches the user")
	var shape map[string]any
	require.NoError(t, json.Unmarshal(data, &shape))
	assert.Equal(t, "A configured capability or prerequisite is unavailable.", shape["message"])
	diag := shape["diagnostic"].(map[string]any)
	for _, k := range []string{"correlationId", "certainty", "phase", "reason", "disposition", "nextAction"} {
		assert.Contains(t, diag, k)
	}

	huge := errs.New(errs.InvalidRequest, "%s", strings.Repeat("x", 500_000))
	assert.LessOrEqual(t, len(huge.Detail), errs.MaxDetail, "a detail is bounded however long its source")
	wrapped := fmt.Errorf("context: %w", e)
	got, ok := errs.As(wrapped)
	require.True(t, ok)
	assert.Same(t, e, got)
	assert.Equal(t, errs.CapabilityUnavailable, errs.CodeOf(wrapped))
	assert.Equal(t, errs.Code(""), errs.CodeOf(cause))
}

func TestThrownCarriesCodeAndReason(t *testing.T) {
	t.Parallel()
	var c errs.Coded = errs.Throw(errs.UnreconciledEffect, "recovery_hold", "node %q waits", "build")
	assert.Equal(t, errs.UnreconciledEffect, c.Code())
	assert.Equal(t, "recovery_hold", c.Reason())
	assert.Equal(t, `node "build" waits`, c.Error())
}
