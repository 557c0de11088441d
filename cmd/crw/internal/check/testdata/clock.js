import { agent } from "crw:agent";
import crw from "crw";

// A time budget read off the run's clock: a resume takes time, so a crash while the second
// call is under way can spend it.
export default async function main() {
  await agent.call({ role: "explorer", prompt: "Look around." });
  const since = crw.now();
  const closer = await agent.call({ role: "explorer", prompt: "Look closer." });
  return { closer: closer.status, overBudget: crw.now() - since >= 20 };
}
