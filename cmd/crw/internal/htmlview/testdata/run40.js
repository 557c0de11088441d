import { agent } from "crw:agent";
const verdict = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false };
export default async function main() {
  const first = await agent.call({ role: "architect", node: "plan", prompt: "plan it" });
  const fixed = await agent.call({ role: "reviewer", node: "plan", prompt: "check it", schema: verdict });
  const more = await agent.call({ role: "architect", node: "plan", prompt: "and more", resume: first.handle });
  const work = [];
  for (let i = 1; i <= 36; i++) work.push(agent.call({ role: "explorer", node: "n" + (i % 6), prompt: "look at part " + i }));
  const done = await Promise.all(work);
  const last = await agent.call({ role: "critic", node: "end", prompt: "sum up" });
  return { calls: done.length + 4, fixed: fixed.status, more: more.status, last: last.status };
}
