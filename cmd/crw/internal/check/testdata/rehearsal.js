import { agent } from "crw:agent";
import crw from "crw";
const loose = (d) => ({ type: "object", description: d, properties: {} });
export default async function main(input) {
  agent.call({ role: "explorer", prompt: "forgot" });
  const r = await agent.call({ role: "explorer", prompt: "x", schema: loose("y") });
  const ok = await crw.decide({ id: "go", question: "go?", schema: { type: "object", properties: { go: { type: "boolean" } }, required: ["go"], additionalProperties: false } });
  await crw.commit("n", "msg");
  if (input === 1) setTimeout(() => {}, 1);
  return [r.status, ok.go];
}
