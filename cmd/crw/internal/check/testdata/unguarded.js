import { agent } from "crw:agent";
import * as schemas from "crw:lib/schemas";

export default async function main() {
  const plan = await agent.call({ role: "architect", node: "plan", prompt: "Plan the change.", schema: schemas.plan });
  return { steps: plan.output.steps.length };
}
