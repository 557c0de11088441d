// Authoring mistakes tsc must find, each with its file and line (types_test.go lists them).
import { agent } from "crw:agent";
import crw from "crw";
import * as schemas from "crw:lib/schemas";

export default async function main() {
  const a = await agent.call({ role: "explorer", promtp: "hi" });
  const b = await agent.call({ role: "explorer", prompt: "hi", efort: "low" });
  const c = await agent.call({ role: "explorer", prompt: "hi", effort: "max" });
  if (c.status === "complete") return 1;
  const d = agent.call({ role: "reviewer", prompt: "hi", schema: schemas.reviewVerdict });
  if (d.status === "completed") return 2;
  const e = await agent.call({ role: "reviewer", prompt: "hi", schema: schemas.reviewVerdict });
  if (e.status === "completed" && e.output.verdict === "approved") return 3;
  if (e.reason === "recovery_held") return 4;
  setTimeout(() => {}, 1);
  crw.lg("x");
  const f = await agent.call({ role: "planner", prompt: "hi" });
  return [a, b, f];
}
