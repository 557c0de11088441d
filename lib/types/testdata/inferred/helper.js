// JavaScript has no `as const`: schema() types the answers (checkJs, strict).
import { agent, schema } from "crw:agent";

const triage = schema({
  type: "object",
  properties: {
    keep: { type: "array", items: { type: "string" } },
    level: { type: "string", enum: ["low", "high"] },
  },
  required: ["keep", "level"],
  additionalProperties: false,
});

export default async function main() {
  const r = await agent.call({ role: "critic", prompt: "Triage.", schema: triage });
  if (r.status !== "completed") return null;
  /** @type {number[]} */
  const lengths = r.output.keep.map((k) => k.length);
  /** @type {"low" | "high"} */
  const level = r.output.level;
  return { lengths, level };
}
