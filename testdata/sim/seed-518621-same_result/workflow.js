import { agent } from "crw:agent";
import * as schemas from "crw:lib/schemas";
import crw from "crw";

const inline_flag = {"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false};
const inline_items = {"type":"object","properties":{"items":{"type":"array","items":{"type":"string","enum":["a","b"]},"maxItems":3},"n":{"type":"integer","minimum":0,"maximum":9}},"required":["items","n"],"additionalProperties":false};
const inline_note = {"type":"object","properties":{"note":{"type":["string","null"]},"level":{"type":"string","enum":["low","high"]}},"required":["note","level"],"additionalProperties":false};
const decided = {"type":"object","properties":{"go":{"type":"boolean"},"note":{"type":["string","null"]}},"required":["go","note"],"additionalProperties":false};

// What the run saw, in order: every result's status, reason and output.
const out = [];
function note(r) {
  out.push(r.status + "/" + r.reason + "/" + (r.status === "completed" ? JSON.stringify(r.output) : "-"));
  return r;
}
// Every unknown outcome is waited on for its verdict before the node is touched again.
async function settle(r) {
  if (r.status !== "unknown") return null;
  const v = await crw.effect(r);
  out.push("verdict/" + v.verdict + "/" + JSON.stringify(v.output));
  return v;
}
function caught(what, e) {
  out.push(what + "/" + e.code + "/" + (e.reason || "-"));
}

export default async function main() {
  const r1 = note(await agent.call({ role: "explorer", node: "n1", prompt: "task 1 of n1", schema: inline_flag }));
  await settle(r1);
  const r2 = note(await agent.call({ role: "critic", node: "n1", prompt: "task 2 of n1", schema: inline_flag }));
  await settle(r2);
  return out;
}
