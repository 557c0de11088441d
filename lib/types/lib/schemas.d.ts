// crw:lib/schemas: its schemas, each typed by the answers it admits. Written by `crw types`.
import type { Schema } from "../agent";

/** A report on work carried out: what was done, what changed and how it was checked. */
export type BuildReport = {
  /** Every file created, modified or deleted. */
  readonly "filesChanged": readonly string[];
  /** What the next person should know: work left over, what blocked it, decisions made along the way; null when there is nothing to add. */
  readonly "notes": null | string;
  /** done: the work is complete; partial: some of it is done and the rest is described in notes; blocked: nothing more can be done without help, and notes say why. */
  readonly "status": "blocked" | "done" | "partial";
  /** What was done, in a few sentences. */
  readonly "summary": string;
  /** The tests and checks that were run, in the order they were run; empty when none was. */
  readonly "testsRun": readonly {
    /** The command exactly as it was run. */
    readonly "command": string;
    /** Whether the command succeeded. */
    readonly "passed": boolean;
  }[];
};
export declare const buildReport: Schema<BuildReport>;

/** A yes or no decision on the question asked, with the reasons for it. */
export type Decision = {
  /** How sure the decision is: low when it rests on guesses, high when the evidence settles it. */
  readonly "confidence": "high" | "low" | "medium";
  /** true for yes, false for no. */
  readonly "decision": boolean;
  /** The reasons for the decision, strongest first. */
  readonly "reasons": readonly string[];
};
export declare const decision: Schema<Decision>;

/** A triage of review findings: which to act on and which to set aside. */
export type FindingTriage = {
  /** One entry for every finding given, in the order given. */
  readonly "findings": readonly ({
    /** keep: the finding is valid and should be addressed; drop: it is wrong, a duplicate, or not worth the change. */
    readonly "action": "drop" | "keep";
    /** The id of the finding, as the review gave it. */
    readonly "id": string;
    /** Why the finding is kept or dropped. */
    readonly "reason": string;
  })[];
  /** The outcome of the triage in a sentence or two. */
  readonly "summary": string;
};
export declare const findingTriage: Schema<FindingTriage>;

/** A plan of work, broken into ordered steps that can each be carried out and checked on their own. */
export type Plan = {
  /** What could go wrong or is still unknown; empty when nothing stands out. */
  readonly "risks": readonly string[];
  /** The steps in the order they should be carried out. */
  readonly "steps": readonly {
    /** What to do and how to tell it is done, precise enough for an engineer who has not seen the discussion. */
    readonly "description": string;
    /** Files the step is expected to create or change; empty when it touches none. */
    readonly "files": readonly string[];
    /** A short identifier unique within the plan, such as "s1"; later calls refer to the step by it. */
    readonly "id": string;
    /** The step in a few words, imperative mood. */
    readonly "title": string;
  }[];
  /** What the plan achieves and how, in two or three sentences. */
  readonly "summary": string;
};
export declare const plan: Schema<Plan>;

/** A code review: the verdict and the findings that support it. */
export type ReviewVerdict = {
  /** Every finding, most severe first; empty when there is nothing to report. */
  readonly "findings": readonly ({
    /** What is wrong and why it matters. */
    readonly "detail": string;
    /** The path of the file concerned, relative to the repository root; null when the finding is not about one file. */
    readonly "file": null | string;
    /** A short identifier unique within the review, such as "f1"; a triage refers to the finding by it. */
    readonly "id": string;
    /** The 1-based line the finding is about; null when it is not about one line. */
    readonly "line": null | number;
    /** critical: wrong results, data loss or a security hole; major: a bug or a missing test that matters; minor: worth fixing but harmless; nit: taste or style. */
    readonly "severity": "critical" | "major" | "minor" | "nit";
    /** How to fix it; null when there is no specific fix to propose. */
    readonly "suggestion": null | string;
    /** The finding in one line. */
    readonly "title": string;
  })[];
  /** The overall assessment in a few sentences. */
  readonly "summary": string;
  /** approve when nothing critical or major remains; request_changes otherwise. */
  readonly "verdict": "approve" | "request_changes";
};
export declare const reviewVerdict: Schema<ReviewVerdict>;
