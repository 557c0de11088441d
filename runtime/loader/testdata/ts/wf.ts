import { agent } from "crw:agent";
import type { Step } from "./types";
import { summarize } from "./summary.js";

interface Input {
  task: string;
  steps?: Step[];
}

type Result = { node: string; summary: string };

class Counter {
  #n = 0;
  static readonly start: number = 1;
  add(by: number = 1): number {
    this.#n += by;
    return this.#n;
  }
}

export default async function main(input: Input): Promise<Result> {
  const res = (await agent.call({ role: "executor", prompt: input.task, node: "run" })) as { node: string };
  const c = new Counter();
  for (const s of input.steps ?? []) c.add(s.weight);
  return { node: res.node, summary: summarize(input.task, c.add(0)) };
}
