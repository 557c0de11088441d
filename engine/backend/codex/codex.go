// Package codex is Codex's vocabulary as the backends that speak it share it (the fake, the App
// Server, the session owner): the kinds of codexErrorInfo, and how each ends a call. A failed
// or interrupted turn, and an RPC error to a thread or turn request, goes through Classify; the
// engine only applies the verdict.
package codex

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crw-dev/crw/engine/backend"
)

// Classify is how a failure whose codexErrorInfo is info ends its call ("" when the host gave
// none): the call-result table of statuses and reasons.
func Classify(info string) *backend.Failure {
	f := &backend.Failure{End: backend.EndHeld, Detail: "codexErrorInfo " + info}
	if info == "" {
		f.Detail = "the host gave no codexErrorInfo"
	}
	switch info {
	case "usageLimitExceeded":
		f.Reason, f.Pause = "host_infra_quota", true
	case "rateLimitExceeded":
		f.Reason, f.Pause = "host_infra_rate", true
	case "serverOverloaded":
		f.Reason = "host_infra_overload"
	case "httpConnectionFailed":
		f.Reason = "host_infra_connection"
	case "responseStreamConnectionFailed", "responseStreamDisconnected", "responseTooManyFailedAttempts":
		f.Reason = "host_infra_stream"
	case "threadRollbackFailed":
		f.Reason = "host_infra_rollback"
	case "activeTurnNotSteerable":
		f.Reason = "host_infra_steering"
	case "other":
		f.Reason = "host_infra_other"
	case "sessionBudgetExceeded":
		f.Reason = "budget_exhausted"
	case "badRequest":
		f.End, f.Reason = backend.EndRefused, "host_config_bad_request"
	case "unauthorized":
		f.End, f.Reason = backend.EndRefused, "host_config_unauthorized"
	case "sandboxError":
		f.End, f.Reason = backend.EndRefused, "host_config_sandbox_error"
	case "cyberPolicy":
		f.End, f.Reason = backend.EndRefused, "host_policy_cyber"
	case "misalignmentPolicyViolation":
		f.End, f.Reason = backend.EndRefused, "host_policy_misalignment"
	case "contextWindowExceeded":
		f.End, f.Reason = backend.EndNullModel, "context_window_exceeded"
	default:
		f.Reason = "host_infra_unknown"
	}
	return f
}

// ToolsSection is what a turn's text ends with so that the agent runs its commands with the
// run's recorded environment (run.json's env: its TMPDIR, and the tool environment it was
// created with): the shell a Codex turn runs in is the host's, and only the text reaches it
// everywhere (a session subagent's packet, an App Server turn). Each entry is a fact, TMPDIR
// first, then the prefix every command takes. It depends on env alone, so every process of a
// run writes the same text. "" for an empty env.
func ToolsSection(env map[string]string, runJSON string) string {
	if len(env) == 0 {
		return ""
	}
	where := "the run's run.json"
	if runJSON != "" {
		where = runJSON
	}
	if tmp, ok := env["TMPDIR"]; ok && len(env) == 1 {
		// A run with no tool environment: the text runs of earlier crw versions sent.
		return "## Tools\n\n- The run's temporary directory is " + tmp + " (recorded in " + where + "). Put TMPDIR=" + tmp +
			" in front of every command you run.\n"
	}
	var b strings.Builder
	b.WriteString("## Tools\n\n")
	prefix := make([]string, 0, len(env))
	for _, name := range backend.EnvNames(env) {
		value := env[name]
		switch name {
		case "TMPDIR":
			fmt.Fprintf(&b, "- The run's temporary directory is %s (recorded in %s).\n", value, where)
			prefix = append(prefix, "TMPDIR="+shellQuote(value))
		case "PATH":
			dirs := strings.TrimSuffix(value, backend.PathTail)
			fmt.Fprintf(&b, "- The run's tools are in %s, before the shell's PATH (recorded in %s).\n", dirs, where)
			prefix = append(prefix, "PATH="+shellQuote(dirs)+`:"$PATH"`)
		default:
			fmt.Fprintf(&b, "- %s is %s (recorded in %s).\n", name, value, where)
			prefix = append(prefix, name+"="+shellQuote(value))
		}
	}
	b.WriteString("\nPut this prefix in front of every command you run:\n\n    " + strings.Join(prefix, " ") + "\n")
	return b.String()
}

// shellQuote quotes a value for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./:@%+=,-", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// InfoKind is a codexErrorInfo's name: the string itself, or the one key of an object such as
// {"httpConnectionFailed":{"httpStatusCode":502}}; "" when the host gave none.
func InfoKind(info json.RawMessage) string {
	var s string
	if json.Unmarshal(info, &s) == nil {
		return s
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(info, &m) == nil && len(m) == 1 {
		for k := range m {
			return k
		}
	}
	return ""
}
