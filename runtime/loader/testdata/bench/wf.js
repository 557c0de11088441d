import { agent } from "crw:agent";
import * as schemas from "crw:lib/schemas";
import crw from "crw";

const roles = ["architect", "executor", "reviewer"];

function prompt(role, task, extra) {
  const lines = [`You are the ${role}.`, `Task: ${task}`];
  if (extra?.notes) {
    lines.push(`Notes: ${extra.notes}`);
  }
  return lines.join("\n");
}

async function step(role, task, node) {
  const res = await agent.call({ role, prompt: prompt(role, task), schema: schemas.plan, node });
  if (res.status !== "completed") {
    return { node, failed: res.reason ?? "unknown" };
  }
  return { node, output: res.output };
}

class Tally {
  #done = 0;
  #failed = 0;
  add(r) {
    if (r.failed) this.#failed++;
    else this.#done++;
  }
  get summary() {
    return { done: this.#done, failed: this.#failed };
  }
}

export default async function main(input) {
  const tally = new Tally();
  const plan = await step("architect", input.task, "plan");
  tally.add(plan);
  if (plan.failed) {
    return { failed: plan.failed, ...tally.summary };
  }
  const results = await Promise.all(
    roles.slice(1).map((role, i) => step(role, input.task, `work-${i}`)),
  );
  for (const r of results) tally.add(r);
  crw.log?.("finished");
  return { steps: results.length, ...tally.summary, at: crw.now() };
}
