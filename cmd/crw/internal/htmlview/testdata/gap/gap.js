import { agent } from "crw:agent";
import crw from "crw";
const verdict = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false };
const keep = { type: "object", properties: { keep: { type: "boolean" } }, required: ["keep"], additionalProperties: false };
export default async function main() {
  const plan = await agent.call({ role: "architect", node: "plan", prompt: "plan it" });
  const check = await agent.call({ role: "reviewer", node: "plan", prompt: "check it", schema: verdict });
  const more = await agent.call({ role: "architect", node: "plan", prompt: "and more", resume: plan.handle });
  const work = [];
  for (let i = 1; i <= 8; i++) work.push(agent.call({ role: "explorer", node: "part" + (i % 3), prompt: "look at part " + i }));
  const seen = await Promise.all(work);
  const kept = await crw.decide({ id: "keep", question: "Keep what the explorers found?", schema: keep });
  let last = await agent.call({ role: "critic", node: "end", prompt: "sum up" });
  if (last.status === "unknown") {
    const v = await crw.effect(last);
    if (v.verdict === "not_applied") last = await agent.call({ role: "critic", node: "end", prompt: "sum up again" });
  }
  return { seen: seen.map((s) => s.status), check: check.status, more: more.status, keep: kept.keep, last: last.status };
}
