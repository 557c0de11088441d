package codex_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/codex"
)

// TestClassify: the call-result table, written out.
func TestClassify(t *testing.T) {
	t.Parallel()
	held, refused, null := backend.EndHeld, backend.EndRefused, backend.EndNullModel
	for _, tt := range []struct {
		info   string
		end    backend.End
		reason string
		pause  bool
	}{
		{"usageLimitExceeded", held, "host_infra_quota", true},
		{"rateLimitExceeded", held, "host_infra_rate", true},
		{"serverOverloaded", held, "host_infra_overload", false},
		{"httpConnectionFailed", held, "host_infra_connection", false},
		{"responseStreamConnectionFailed", held, "host_infra_stream", false},
		{"responseStreamDisconnected", held, "host_infra_stream", false},
		{"responseTooManyFailedAttempts", held, "host_infra_stream", false},
		{"threadRollbackFailed", held, "host_infra_rollback", false},
		{"activeTurnNotSteerable", held, "host_infra_steering", false},
		{"other", held, "host_infra_other", false},
		{"sessionBudgetExceeded", held, "budget_exhausted", false},
		{"badRequest", refused, "host_config_bad_request", false},
		{"unauthorized", refused, "host_config_unauthorized", false},
		{"sandboxError", refused, "host_config_sandbox_error", false},
		{"cyberPolicy", refused, "host_policy_cyber", false},
		{"misalignmentPolicyViolation", refused, "host_policy_misalignment", false},
		{"contextWindowExceeded", null, "context_window_exceeded", false},
		{"internalServerError", held, "host_infra_unknown", false},
	} {
		got := codex.Classify(tt.info)
		assert.Equal(t, &backend.Failure{End: tt.end, Reason: tt.reason, Pause: tt.pause, Detail: "codexErrorInfo " + tt.info}, got, tt.info)
	}
	assert.Equal(t, &backend.Failure{End: held, Reason: "host_infra_unknown", Detail: "the host gave no codexErrorInfo"}, codex.Classify(""))
}

// TestToolsSection: a run with no tool environment gets the TMPDIR sentence runs have always
// been sent; a tool environment makes each entry a fact, TMPDIR first, then PATH, then the
// rest by name, and one prefix with every value quoted for the shell where it needs it.
func TestToolsSection(t *testing.T) {
	assert.Equal(t, "", codex.ToolsSection(nil, ""))
	assert.Equal(t, "## Tools\n\n- The run's temporary directory is /tmp/r (recorded in /s/flow/R/run.json). Put TMPDIR=/tmp/r in front of every command you run.\n",
		codex.ToolsSection(map[string]string{"TMPDIR": "/tmp/r"}, "/s/flow/R/run.json"))
	got := codex.ToolsSection(map[string]string{"TMPDIR": "/tmp/r", "PATH": "/opt/go/bin:/opt/x" + backend.PathTail,
		"GOROOT": "/opt/go", "GOTOOLCHAIN": "local", "NOTE": "it's two words"}, "/s/flow/R/run.json")
	assert.Equal(t, "## Tools\n\n"+
		"- The run's temporary directory is /tmp/r (recorded in /s/flow/R/run.json).\n"+
		"- The run's tools are in /opt/go/bin:/opt/x, before the shell's PATH (recorded in /s/flow/R/run.json).\n"+
		"- GOROOT is /opt/go (recorded in /s/flow/R/run.json).\n"+
		"- GOTOOLCHAIN is local (recorded in /s/flow/R/run.json).\n"+
		"- NOTE is it's two words (recorded in /s/flow/R/run.json).\n"+
		"\nPut this prefix in front of every command you run:\n\n"+
		`    TMPDIR=/tmp/r PATH=/opt/go/bin:/opt/x:"$PATH" GOROOT=/opt/go GOTOOLCHAIN=local NOTE='it'\''s two words'`+"\n", got)
}
