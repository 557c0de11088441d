// build-commit: an executor builds a change in its node's worktree and a reviewer reviews the
// pending work in a checkout of it; an executor that comes back with nothing valid (null_model)
// steps the node up a tier and builds again from the start; the run's owner decides whether to
// keep the approved change, and crw.commit keeps it on refs/crw/flow/<run>/nodes/change.
//
//   crw flow run workflows/build-commit.js --repo DIR --input '{"task": "Add a --verbose flag"}'
//   crw flow answer RUN keep --value '{"keep": true, "note": null}'
import { agent } from "crw:agent";
import * as schemas from "crw:lib/schemas";
import crw from "crw";

const defaults = {
  task: "Add a --verbose flag to the command line that prints each step as it runs.",
  maxRounds: 2,
};

const keep = {
  type: "object",
  properties: {
    keep: { type: "boolean", description: "true keeps the change: it is committed." },
    note: { type: ["string", "null"], description: "Why, or null." },
  },
  required: ["keep", "note"],
  additionalProperties: false,
};

const approve = {
  type: "object",
  properties: { approve: { type: "boolean", description: "true lets the stronger tier build." } },
  required: ["approve"],
  additionalProperties: false,
};

/** @param {{ task?: string, maxRounds?: number } | null} input the run's --input */
export default async function main(input) {
  const { task, maxRounds } = { ...defaults, ...(input ?? {}) };
  const buildPrompt = [
    `Make this change in your workspace: ${task}`,
    "Run the tests that cover what you changed and report them. Do not commit: crw keeps the change.",
  ].join("\n");

  let build = await agent.call({ role: "executor", node: "change", prompt: buildPrompt, schema: schemas.buildReport });
  let tier = "executor";
  if (build.status === "null_model") {
    const step = crw.tierStep("change", build);
    tier = step.role;
    crw.log(`the executor gave no valid report: node change steps up to ${step.role}`);
    if (step.decision) {
      const go = await crw.decide({ id: step.decision, question: `Let ${step.role} build the change again?`, schema: approve });
      if (!go.approve) return { outcome: "not_stepped_up", tier };
    }
    build = await agent.call({ role: "executor", node: "change", prompt: buildPrompt, schema: schemas.buildReport });
  }
  if (build.status !== "completed") {
    return { outcome: "build_failed", tier, status: build.status, reason: build.reason };
  }

  let review;
  for (let round = 1; ; round++) {
    // The reviewer's checkout holds the node's pending work: what the executor left.
    review = await agent.call({
      role: "reviewer",
      node: "change",
      prompt: [`Review the change in your workspace, made for: ${task}`, `The executor reports: ${build.output.summary}`,
        "Approve only when nothing critical or major remains."].join("\n"),
      schema: schemas.reviewVerdict,
    });
    if (review.status !== "completed") {
      return { outcome: "review_failed", tier, status: review.status, reason: review.reason };
    }
    if (review.output.verdict === "approve" || round >= maxRounds) break;
    crw.log(`round ${round}: ${review.output.findings.length} finding(s) to fix`);
    build = await agent.call({
      role: "executor",
      node: "change",
      prompt: ["Fix these review findings in your workspace:", ...review.output.findings.map((f) => `- ${f.title}: ${f.detail}`)].join("\n"),
      schema: schemas.buildReport,
    });
    if (build.status !== "completed") {
      return { outcome: "fix_failed", tier, status: build.status, reason: build.reason };
    }
  }
  if (review.output.verdict !== "approve") {
    return { outcome: "not_approved", tier, findings: review.output.findings.length };
  }

  const verdict = await crw.decide({ id: "keep", question: `Keep the change? ${build.output.summary}`, schema: keep });
  if (!verdict.keep) {
    return { outcome: "discarded", tier, note: verdict.note };
  }
  const kept = await crw.commit("change", { message: task });
  return { outcome: "committed", tier, commit: kept.commit, ref: kept.ref, filesChanged: build.output.filesChanged };
}
