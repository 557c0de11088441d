import { agent } from "crw:agent";
import * as schemas from "crw:lib/schemas";
import crw from "crw";

const pick = {
  type: "object",
  properties: { lens: { type: "string", enum: ["correctness", "security"] } },
  required: ["lens"],
  additionalProperties: false,
};

// Everything it returns is journaled: a crash and a resume read it all back.
export default async function main() {
  const roll = crw.random();
  const first = await agent.call({ role: "explorer", node: "look", prompt: `Look around (${roll}).` });
  const { lens } = await crw.decide({ id: "lens", question: "Which lens?", schema: pick });
  const [review, plan] = await Promise.all([
    agent.call({ role: "reviewer", node: "review", prompt: `Review for ${lens}.`, schema: schemas.reviewVerdict }),
    agent.call({ role: "architect", node: "plan", prompt: "Plan the fixes.", schema: schemas.plan }),
  ]);
  return { roll, again: crw.random(), first, lens, review, plan };
}
