// plan-build-review: an architect plans a change, an executor carries it out, and a reviewer
// reviews it; while the reviewer requests changes, the executor fixes the findings on the same
// conversation (a continuation of its build call), for at most maxRounds reviews.
//
//   crw flow run workflows/plan-build-review.js --input '{"task": "Add a --verbose flag"}'
import { agent } from "crw:agent";
import * as schemas from "crw:lib/schemas";
import crw from "crw";

const defaults = {
  task: "Add a --verbose flag to the command line that prints each step as it runs.",
  maxRounds: 3,
};

/** @param {{ task?: string, maxRounds?: number } | null} input the run's --input */
export default async function main(input) {
  const { task, maxRounds } = { ...defaults, ...(input ?? {}) };

  const plan = await agent.call({
    role: "architect",
    node: "plan",
    prompt: `Plan this change as a short list of steps an engineer can carry out one by one.\n\nTask: ${task}`,
    schema: schemas.plan,
  });
  if (plan.status !== "completed") {
    return { outcome: "no_plan", status: plan.status, reason: plan.reason };
  }
  crw.log(`plan: ${plan.output.steps.length} step(s)`);

  let build = await agent.call({
    role: "executor",
    node: "build",
    prompt: [
      `Carry out this plan for the task: ${task}`,
      "",
      ...plan.output.steps.map((s, i) => `${i + 1}. [${s.id}] ${s.title}: ${s.description}`),
      "",
      "Run the tests that cover what you changed and report them.",
    ].join("\n"),
    schema: schemas.buildReport,
  });

  const rounds = [];
  for (let round = 1; round <= maxRounds; round++) {
    if (build.status !== "completed") {
      return { outcome: "build_failed", rounds, status: build.status, reason: build.reason };
    }
    const review = await agent.call({
      role: "reviewer",
      node: "review",
      prompt: [
        `Review the change made for: ${task}`,
        `The executor reports: ${build.output.summary}`,
        `Files changed: ${build.output.filesChanged.join(", ") || "none"}`,
        "Approve only when nothing critical or major remains.",
      ].join("\n"),
      schema: schemas.reviewVerdict,
    });
    if (review.status !== "completed") {
      return { outcome: "review_failed", rounds, status: review.status, reason: review.reason };
    }
    rounds.push({ round, verdict: review.output.verdict, findings: review.output.findings.length });
    if (review.output.verdict === "approve") {
      return {
        outcome: "approved",
        rounds,
        steps: plan.output.steps.length,
        filesChanged: build.output.filesChanged,
      };
    }
    crw.log(`round ${round}: ${review.output.findings.length} finding(s) to fix`);
    build = await agent.call({
      role: "executor",
      node: "build",
      resume: build.handle,
      prompt: [
        "The reviewer requested changes. Fix these findings, then report again:",
        ...review.output.findings.map((f) => `- [${f.severity}] ${f.title}${f.file ? ` (${f.file})` : ""}: ${f.detail}`),
      ].join("\n"),
      schema: schemas.buildReport,
    });
  }
  return { outcome: "not_approved", rounds };
}
