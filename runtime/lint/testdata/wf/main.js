import { agent, schema } from "crw:agent";
import { crw } from "crw";
import { looseSchema } from "./helpers.js";

const strict = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false };
const loose = { type: "object", properties: { ok: { type: "boolean" } } };

export default async function main(input) {
  const a = await agent.call({ role: "explorer", promtp: "hi" });
  const b = await agent.call({ role: "explorer", prompt: "hi", efort: "low" });
  const c = await agent.call({ role: "reviwer", prompt: "hi", effort: "max" });
  const d = await agent.call({ role: "explorer", prompt: "", schema: strict });
  const e = await agent.call({ role: "explorer", prompt: "hi", schema: loose });
  const f = await agent.call({ ...input.options, prompt: "spread: nothing is missing" });
  const g = await agent.call({ role: "explorer", prompt: "hi", schema: looseSchema });
  setTimeout(() => {}, 10);
  crw.log("x");
  const wrapped = schema({ type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] });
  const h = await agent.call({ role: "explorer", prompt: "hi", schema: wrapped });
  const i = await agent.call({ role: "explorer", prompt: "hi", schema: schema(strict) });
  return [a, b, c, d, e, f, g, h, i];
}
