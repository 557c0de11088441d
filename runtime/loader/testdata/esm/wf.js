import { agent } from "crw:agent";
import * as schemas from "crw:lib/schemas";
import crw from "crw";
import { double, label } from "./helper.js";
import data from "./data.json";
import { fmt } from "./util";

export default async function main(input) {
  const res = await agent.call({ role: "architect", prompt: "Plan: " + input.task, schema: schemas.plan, node: "plan" });
  const steps = input.steps?.length ?? 0;
  return {
    node: res.node,
    doubled: double(steps),
    label: label,
    answer: data.answer,
    now: crw.now(),
    hasPlan: typeof schemas.plan === "object",
    keys: fmt({ ...data, extra: 1 }),
  };
}
