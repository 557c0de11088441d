package engine

import "github.com/crw-dev/crw/journal"

// Classification is how a failed turn ends its call.
type Classification struct {
	Type   string // the terminal row: held, refused or null_model
	Reason string
	Pause  bool // a usage or rate limit also pauses the run
}

// Classify maps a codexErrorInfo to its terminal row and reason ("" means the host gave none).
func Classify(info string) Classification {
	held := func(r string) Classification { return Classification{Type: journal.TypeHeld, Reason: r} }
	switch info {
	case "usageLimitExceeded":
		return Classification{Type: journal.TypeHeld, Reason: "host_infra_quota", Pause: true}
	case "rateLimitExceeded":
		return Classification{Type: journal.TypeHeld, Reason: "host_infra_rate", Pause: true}
	case "serverOverloaded":
		return held("host_infra_overload")
	case "httpConnectionFailed":
		return held("host_infra_connection")
	case "responseStreamConnectionFailed", "responseStreamDisconnected", "responseTooManyFailedAttempts":
		return held("host_infra_stream")
	case "threadRollbackFailed":
		return held("host_infra_rollback")
	case "activeTurnNotSteerable":
		return held("host_infra_steering")
	case "other":
		return held("host_infra_other")
	case "sessionBudgetExceeded":
		return held("budget_exhausted")
	case "badRequest":
		return Classification{Type: journal.TypeRefused, Reason: "host_config_bad_request"}
	case "unauthorized":
		return Classification{Type: journal.TypeRefused, Reason: "host_config_unauthorized"}
	case "sandboxError":
		return Classification{Type: journal.TypeRefused, Reason: "host_config_sandbox_error"}
	case "cyberPolicy":
		return Classification{Type: journal.TypeRefused, Reason: "host_policy_cyber"}
	case "misalignmentPolicyViolation":
		return Classification{Type: journal.TypeRefused, Reason: "host_policy_misalignment"}
	case "contextWindowExceeded":
		return Classification{Type: journal.TypeNullModel, Reason: "context_window_exceeded"}
	}
	return held("host_infra_unknown")
}
