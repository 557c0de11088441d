// crw:agent: agent.call and what it resolves to. Written by `crw types`; see docs/workflows.md.

/** The roles a call may name. */
export type Role = "architect" | "executor" | "executor-t1" | "reviewer" | "explorer" | "critic";

/** The reasoning efforts a call may request. */
export type Effort = "none" | "minimal" | "low" | "medium" | "high" | "xhigh";

/** A call's status: its terminal row's type, outcome_unknown reading unknown. */
export type Status = "completed" | "null_model" | "held" | "refused" | "unknown" | "superseded";

/** Why a call did not complete: a closed set. */
export type Reason =
  | "schema_invalid_after_repair"
  | "context_window_exceeded"
  | "host_infra_quota"
  | "host_infra_rate"
  | "host_infra_overload"
  | "host_infra_connection"
  | "host_infra_stream"
  | "host_infra_rollback"
  | "host_infra_steering"
  | "host_infra_other"
  | "host_infra_unknown"
  | "host_config_bad_request"
  | "host_config_unauthorized"
  | "host_config_sandbox_error"
  | "host_config_flow_binding"
  | "host_config_workspace"
  | "host_policy_cyber"
  | "host_policy_misalignment"
  | "host_interrupted_external"
  | "engine_paused"
  | "budget_exhausted"
  | "pair_refused"
  | "policy_refused"
  | "independence_refused"
  | "missing_step_decision"
  | "schema_not_strict"
  | "foreign_handle"
  | "dispatch_unknown"
  | "superseded_by_attempt"
  | "superseded_by_resume"
  | "cancelled"
  | "worktree_failed"
  | "restore_snapshot_mismatch"
  | "accepted_node_changed"
  | "recovery_hold";

/**
 * A JSON Schema held to the strict structured-output rules (docs/workflows.md). T is the type of
 * an answer that satisfies it: the schemas of crw:lib/schemas carry theirs; a schema written in
 * the workflow answers `any`.
 */
export interface Schema<T = any> {
  readonly [keyword: string]: unknown;
  /** Never present: it carries the answer's type. */
  readonly " answer"?: T;
}

/** A model and reasoning effort; a part the role table leaves to the host is null. */
export interface Pair {
  readonly model: string | null;
  readonly effort: Effort | null;
}

/** The tokens a call spent. */
export interface Tokens {
  readonly input: number;
  readonly cachedInput: number;
  readonly output: number;
  readonly reasoningOutput: number;
  readonly total: number;
}

/** What a CallResult says of how the call ran. */
export interface CallMeta {
  readonly role: Role;
  readonly requestedPair: Pair;
  readonly configuredPair: Pair;
  readonly threadId: string | null;
  readonly turnIds: readonly string[];
  readonly repairUsed: boolean;
  readonly tokens: Tokens;
  /** The seqs of the call's prepared and terminal rows: absent in a run `crw flow run` created. */
  readonly startSeq?: number;
  readonly endSeq?: number;
}

interface CallResultBase {
  /** The journal's call id: c1, c2, … in issue order. */
  readonly callId: string;
  /** crwh1:<run>:<call>, once a thread exists for the call: what `resume` continues. */
  readonly handle: string | null;
  readonly meta: CallMeta;
}

/** A call that completed: its output satisfies the schema (a call without one answers text). */
export interface Completed<T> extends CallResultBase {
  readonly status: "completed";
  readonly output: T;
  readonly reason: null;
}

/** A call that did not complete, and why. */
export interface NotCompleted extends CallResultBase {
  readonly status: Exclude<Status, "completed">;
  readonly output: null;
  readonly reason: Reason;
}

/** What agent.call resolves to, deeply frozen. Test `status` before reading `output`. */
export type CallResult<T = any> = Completed<T> | NotCompleted;

/** agent.call's options: any other is refused at the call site (invalid_request). */
export interface CallOptions {
  readonly role: Role;
  /** The task; must not be empty. */
  readonly prompt: string;
  /** The workflow node the call belongs to (default: the role); recovery holds are per node. */
  readonly node?: string | null;
  readonly model?: string | null;
  readonly effort?: Effort | null;
  /** A handle: the call continues that call's conversation on a new thread. */
  readonly resume?: string | null;
}

export interface Agent {
  /**
   * One model turn whose answer must satisfy the schema (one repair turn at most); without a
   * schema the answer is text.
   */
  call<T = any>(options: CallOptions & { readonly schema?: Schema<T> | null }): Promise<CallResult<T>>;
  /** The roles a call may name. */
  readonly roles: readonly Role[];
}

export declare const agent: Agent;
