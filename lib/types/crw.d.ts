// crw: the run's input and the deterministic services a workflow may use. Written by
// `crw types`; see docs/workflows.md and docs/workspaces.md.
import type { AnswerOf, CallResult, Pair, Role, Schema } from "./agent";

/** What crw.commit committed on the node's ref. */
export interface Commit {
  readonly node: string;
  readonly commit: string;
  readonly tree: string;
  readonly parent: string;
  readonly ref: string;
  readonly message: string;
}

/** What crw.tierStep recorded: the node's executor calls run as the next tier from now on. */
export interface TierStep {
  readonly node: string;
  readonly tier: number;
  readonly role: Role;
  readonly pair: Pair;
  /** The null_model call given as the evidence. */
  readonly evidence: string;
  /** The decision the step waits for (--tier-steps ask), else null. */
  readonly decision: string | null;
}

/** An operator's verdict on a call that ended unknown (crw flow recover). */
export interface Verdict<T = any> {
  readonly callId: string;
  /** applied: the turn ran; not_applied: it did not, and the node's next call may send again. */
  readonly verdict: "applied" | "not_applied";
  /** What an applied turn answered, as the operator recorded it (checked against the call's schema); else null. */
  readonly output: T | null;
  /** Who gave it. */
  readonly by: string;
}

interface Crw {
  /** The run's input (--input), deeply frozen; null when none was given. */
  readonly input: any;
  /** A line of the run's log (crw.log in its folder; muted while the run replays). */
  log(...values: unknown[]): void;
  /** The run's clock, in milliseconds since the Unix epoch: the time of the last step the workflow saw, the same on a replay. */
  now(): number;
  /** A uniform number in [0, 1) from the run's seeded stream: the same on a replay. */
  random(): number;
  /** Commits the pending work of the node's worktree on its ref. */
  commit(node: string, options: { readonly message: string } | string): Promise<Commit>;
  /** Moves the node's executor calls up a tier, on the evidence of one of its executor calls that ended null_model. */
  tierStep(node: string, evidence: CallResult): TierStep;
  /** Asks the run's owner a question; resolves to an answer that satisfies the schema (crw flow answer). */
  decide<const S extends Schema>(decision: { readonly id: string; readonly question: string; readonly schema: S }): Promise<AnswerOf<S>>;
  /** Waits for the operator's verdict on a call that ended unknown. */
  effect<T = any>(call: CallResult<T> | string): Promise<Verdict<T>>;
}

declare const crw: Crw;
export default crw;
