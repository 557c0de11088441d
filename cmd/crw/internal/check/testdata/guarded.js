import { agent } from "crw:agent";
import * as schemas from "crw:lib/schemas";
import crw from "crw";

const depth = {
  type: "object",
  properties: { depth: { type: "string", enum: ["quick", "thorough"] } },
  required: ["depth"],
  additionalProperties: false,
};

// Every result's status is looked at before its output is read; a lost answer waits for the
// verdict on it.
async function settled(result) {
  if (result.status === "completed") return result.output;
  if (result.status !== "unknown") return null;
  const v = await crw.effect(result);
  return v.verdict === "applied" ? v.output : null;
}

export default async function main() {
  const plan = await settled(await agent.call({ role: "architect", node: "plan", prompt: "Plan the change.", schema: schemas.plan }));
  if (plan === null) return { outcome: "no_plan" };
  const { depth: how } = await crw.decide({ id: "depth", question: "How thoroughly?", schema: depth });
  const built = await Promise.all(plan.steps.map((s) =>
    agent.call({ role: "executor", node: s.id, prompt: `${s.description} (${how})`, schema: schemas.buildReport }).then(settled)));
  const notes = await agent.call({ role: "explorer", node: "notes", prompt: "Summarize the change." });
  return { outcome: "built", built: built.map((b) => b !== null), notes: notes.status === "completed" ? notes.output : null };
}
