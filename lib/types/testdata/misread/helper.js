// JavaScript's misreadings of an answer typed by schema().
import { agent, schema } from "crw:agent";
const triage = schema({ type: "object", properties: { keep: { type: "array", items: { type: "string" } }, level: { type: "string", enum: ["low", "high"] } }, required: ["keep", "level"], additionalProperties: false });
export default async function main() {
  const r = await agent.call({ role: "critic", prompt: "Triage.", schema: triage });
  if (r.status !== "completed") return null;
  /** @type {number} */
  const level = r.output.level;
  return [level, r.output.kept];
}
