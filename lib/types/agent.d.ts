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
 * an answer that satisfies it: the schemas of crw:lib/schemas carry theirs, and so does what
 * `schema()` returns. Annotate a schema built at run time, which no type reaches, as a
 * `Schema<T>` of the answer you expect (`Schema` alone answers `any`).
 */
export interface Schema<T = any> {
  readonly [keyword: string]: unknown;
  /** Never present: it carries the answer's type. */
  readonly " answer"?: T;
}

/**
 * The type of the answers a schema admits, read from its literal type (a schema written
 * `as const`, in the call, or given to `schema()`), like json-schema-to-ts's FromSchema for
 * crw's strict subset: type (and type arrays), properties and required (a property not in
 * required is optional), items, enum, const, anyOf, $ref to #/$defs, and a `Schema<T>` inside
 * one. What it cannot read (a keyword's value widened to `string`, a $ref past 24 steps of
 * nesting: a recursive schema) is `unknown`.
 */
export type FromSchema<S> = SchemaNode<S, S, []>;

// D counts the steps taken into the schema: a recursive $ref ends in unknown rather than in
// tsc's "excessively deep" error.
type SchemaNode<S, Root, D extends readonly unknown[]> =
  D["length"] extends 24 ? unknown
  : 0 extends 1 & S ? any
  : " answer" extends keyof S ? (S extends Schema<infer T> ? T : unknown)
  : S extends { readonly $ref: infer Ref } ? SchemaRef<Ref, Root, [...D, 0]>
  : S extends { readonly const: infer C } ? C
  : S extends { readonly enum: readonly (infer E)[] } ? E
  : S extends { readonly anyOf: readonly (infer A)[] } ? (A extends unknown ? SchemaNode<A, Root, [...D, 0]> : never)
  : S extends { readonly type: infer K } ? SchemaKind<K extends readonly (infer E)[] ? E : K, S, Root, D>
  : unknown;

type SchemaRef<Ref, Root, D extends readonly unknown[]> =
  Ref extends `#/$defs/${infer Name}`
    ? Root extends { readonly $defs: infer Defs } ? (Name extends keyof Defs ? SchemaNode<Defs[Name], Root, D> : unknown) : unknown
    : unknown;

// Distributes over the names of a type array: ["string", "null"] is string | null.
type SchemaKind<K, S, Root, D extends readonly unknown[]> =
  K extends "string" ? string
  : K extends "number" | "integer" ? number
  : K extends "boolean" ? boolean
  : K extends "null" ? null
  : K extends "array" ? (S extends { readonly items: infer I } ? readonly SchemaNode<I, Root, [...D, 0]>[] : readonly unknown[])
  : K extends "object" ? (S extends { readonly properties: infer P } ? SchemaObject<P, SchemaRequired<S>, Root, [...D, 0]> : {})
  : unknown;

type SchemaRequired<S> = S extends { readonly required: readonly (infer N)[] } ? N : never;

// One object type rather than an intersection, so an editor shows the answer's fields.
type SchemaObject<P, Req, Root, D extends readonly unknown[]> = Flatten<
  { readonly [N in keyof P as N extends Req ? N : never]: SchemaNode<P[N], Root, D> } &
  { readonly [N in keyof P as N extends Req ? never : N]?: SchemaNode<P[N], Root, D> }
>;

type Flatten<T> = T extends infer O ? { [K in keyof O]: O[K] } : never;

/**
 * What a call with schema S answers: FromSchema<S>, T for a Schema<T>, text without a schema.
 * A schema whose type is no literal (an object written without `as const` outside the call,
 * whose `type` widened to `string`) answers `any`, as it did before answers were inferred.
 */
export type AnswerOf<S> =
  0 extends 1 & S ? any
  : S extends null | undefined ? string
  : S extends { readonly type: infer K } ? (string extends K ? any : FromSchema<S>)
  : FromSchema<S>;

/**
 * The schema, unchanged, typed by the answers it admits: `schema({ type: "object", … })` is what
 * `{ … } as const` is, in JavaScript too, where `as const` cannot be written.
 */
export declare function schema<const S extends Schema>(s: S): S & Schema<FromSchema<S>>;

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
  call<const S extends Schema | null | undefined = undefined>(options: CallOptions & { readonly schema?: S }): Promise<CallResult<AnswerOf<S>>>;
  /** The roles a call may name. */
  readonly roles: readonly Role[];
}

export declare const agent: Agent;
