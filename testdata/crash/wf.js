import { agent } from "crw:agent";
import * as schemas from "crw:lib/schemas";

export default async function main() {
  const plan = await agent.call({ role: "architect", node: "plan", prompt: "plan it", schema: schemas.plan });
  const builds = await Promise.all(plan.output.steps.map((s) =>
    agent.call({ role: "critic", node: s.id, prompt: "build " + s.id, schema: schemas.buildReport })));
  const first = await Promise.race([
    agent.call({ role: "explorer", node: "race-a", prompt: "look a" }),
    agent.call({ role: "explorer", node: "race-b", prompt: "look b" }),
  ]);
  let review = await agent.call({ role: "reviewer", node: "review", prompt: "review", schema: schemas.reviewVerdict });
  let rounds = 1;
  let fix = builds[0];
  while (review.output.verdict !== "approve" && rounds < 3) {
    fix = await agent.call({ role: "critic", node: "s1", resume: fix.handle, prompt: "fix round " + rounds, schema: schemas.buildReport });
    review = await agent.call({ role: "reviewer", node: "review", prompt: "review again " + rounds, schema: schemas.reviewVerdict });
    rounds++;
  }
  return {
    steps: plan.output.steps.map((s) => s.id),
    repaired: plan.meta.repairUsed,
    planTurns: plan.meta.turnIds,
    planTokens: plan.meta.tokens,
    builds: builds.map((b) => [b.callId, b.status, b.output.summary]),
    first: first.output,
    rounds, verdict: review.output.verdict, fix: fix.callId,
  };
}
