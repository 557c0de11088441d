// Valid code the static pass must leave alone.
import crw from "crw";
import { agent as crwAgent } from "crw:agent";
const agent = { call: (o) => o.name };
agent.call({ name: "not crw's agent" });
const other = { agent: { call: (o) => o } };
other.agent.call({ tool: "hammer" });
const ask = (role) => crwAgent.call({ role, prompt: "k" });
function elsewhere() { const role = "bogus"; return role; }
let effort = "bogus";
effort = "low";
const loose = { type: "object", properties: {} };
loose.additionalProperties = false;
loose.required = [];
function setTimeout(f) { return f(); }
export default async function main() {
  setTimeout(() => 1);
  crw.log("ok");
  elsewhere();
  await crwAgent.call({ role: "explorer", prompt: "x", effort, schema: loose });
  return ask("critic");
}
