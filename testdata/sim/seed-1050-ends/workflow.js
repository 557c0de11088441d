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
  const r1 = note(await agent.call({ role: "explorer", node: "n1", prompt: "task 1 of n1", schema: schemas.plan }));
  await settle(r1);
  const [r3, r4, r5, r6] = await Promise.all([
    agent.call({ role: "reviewer", node: "n2", prompt: "task 3 of n2", schema: schemas.findingTriage }),
    agent.call({ role: "critic", node: "n1", prompt: "task 4 of n1" }),
    agent.call({ role: "critic", node: "n3", prompt: "task 5 of n3", schema: inline_note }),
    agent.call({ role: "reviewer", node: "n4", prompt: "task 6 of n4" }),
  ]);
  note(r3);
  note(r4);
  note(r5);
  note(r6);
  await settle(r3);
  await settle(r4);
  await settle(r5);
  await settle(r6);
  const [r8, r9, r10, r11] = await Promise.all([
    agent.call({ role: "critic", node: "n1", prompt: "task 8 of n1", schema: schemas.plan }),
    agent.call({ role: "explorer", node: "n6", prompt: "task 9 of n6", schema: inline_note }),
    agent.call({ role: "critic", node: "n7", prompt: "task 10 of n7", schema: inline_items }),
    agent.call({ role: "critic", node: "n4", prompt: "task 11 of n4" }),
  ]);
  note(r8);
  note(r9);
  note(r10);
  note(r11);
  await settle(r8);
  await settle(r9);
  await settle(r10);
  await settle(r11);
  const r13 = note(await agent.call({ role: "critic", node: "n7", prompt: "task 13 of n7", schema: inline_note }));
  await settle(r13);
  return out;
}
