package result

import "slices"

// Reasons is the closed set of a CallResult's reason (seed 000), each host_<group>_<kind> the
// backends produce spelled out. crw types writes it as the Reason union of crw:agent, and every
// terminal row a run writes carries one of them (or none, when it completed).
var Reasons = []string{
	"schema_invalid_after_repair",
	"context_window_exceeded",
	"host_infra_quota",
	"host_infra_rate",
	"host_infra_overload",
	"host_infra_connection",
	"host_infra_stream",
	"host_infra_rollback",
	"host_infra_steering",
	"host_infra_other",
	"host_infra_unknown",
	"host_config_bad_request",
	"host_config_unauthorized",
	"host_config_sandbox_error",
	"host_config_flow_binding",
	"host_config_workspace",
	"host_policy_cyber",
	"host_policy_misalignment",
	"host_interrupted_external",
	"engine_paused",
	"budget_exhausted",
	"pair_refused",
	"policy_refused",
	"independence_refused",
	"missing_step_decision",
	"schema_not_strict",
	"foreign_handle",
	"dispatch_unknown",
	"superseded_by_attempt",
	"superseded_by_resume",
	"cancelled",
	"worktree_failed",
	"restore_snapshot_mismatch",
	"accepted_node_changed",
	"recovery_hold",
}

// IsReason reports whether reason is one of the closed set.
func IsReason(reason string) bool { return slices.Contains(Reasons, reason) }
