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
  const [r1, r2, r3] = await Promise.all([
    agent.call({ role: "reviewer", node: "n1", prompt: "task 1 of n1", schema: inline_flag }),
    agent.call({ role: "reviewer", node: "n2", prompt: "task 2 of n2" }),
    agent.call({ role: "explorer", node: "n3", prompt: "task 3 of n3", schema: inline_flag }),
  ]);
  note(r1);
  note(r2);
  note(r3);
  await settle(r1);
  await settle(r2);
  await settle(r3);
  const r4 = note(await agent.call({ role: "architect", node: "n2", prompt: "task 4 of n2", schema: schemas.buildReport }));
  await settle(r4);
  const [r5, r6, r7, r8] = await Promise.all([
    agent.call({ role: "architect", node: "n4", prompt: "task 5 of n4", schema: inline_flag }),
    agent.call({ role: "reviewer", node: "n5", prompt: "task 6 of n5", schema: schemas.findingTriage }),
    agent.call({ role: "explorer", node: "n6", prompt: "task 7 of n6", schema: schemas.plan }),
    agent.call({ role: "executor", node: "n7", prompt: "task 8 of n7" }),
  ]);
  note(r5);
  note(r6);
  note(r7);
  note(r8);
  await settle(r5);
  await settle(r6);
  await settle(r7);
  await settle(r8);
  try {
    const k = await crw.commit("n7", { message: "work of n7" });
    out.push("commit/" + k.node + "/" + k.tree);
  } catch (e) {
    caught("commit", e);
  }
  return out;
}
