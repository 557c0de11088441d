import { agent } from "crw:agent";
import * as schemas from "crw:lib/schemas";
import crw from "crw";

const inline_flag = {"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false};
const inline_items = {"type":"object","properties":{"items":{"type":"array","items":{"type":"string","enum":["a","b"]},"maxItems":3},"n":{"type":"integer","minimum":0,"maximum":9}},"required":["items","n"],"additionalProperties":false};
const inline_note = {"type":"object","properties":{"note":{"type":["string","null"]},"level":{"type":"string","enum":["low","high"]}},"required":["note","level"],"additionalProperties":false};
const decided = {"type":"object","properties":{"go":{"type":"boolean"},"note":{"type":["string","null"]}},"required":["go","note"],"additionalProperties":false};

// What the run saw, in order: every result's status, reason and output. Each result turns a
// schema's enum around in place: the next call with it asks with the other order (a schema
// object changed between the calls it is given to, which crw must see every time).
const out = [];
function note(r) {
  out.push(r.status + "/" + r.reason + "/" + (r.status === "completed" ? JSON.stringify(r.output) : "-"));
  inline_note.properties.level.enum.reverse();
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
  const [r1, r2, r3, r4] = await Promise.all([
    agent.call({ role: "executor", node: "n1", prompt: "task 1 of n1" }),
    agent.call({ role: "executor", node: "n2", prompt: "task 2 of n2", schema: inline_flag }),
    agent.call({ role: "reviewer", node: "n3", prompt: "task 3 of n3", schema: schemas.plan }),
    agent.call({ role: "executor", node: "n4", prompt: "task 4 of n4", schema: inline_flag }),
  ]);
  note(r1);
  note(r2);
  note(r3);
  note(r4);
  await settle(r1);
  await settle(r2);
  await settle(r3);
  await settle(r4);
  if (r2.status === "null_model") {
    try {
      out.push("tier/" + crw.tierStep("n2", r2).role);
    } catch (e) {
      caught("tier", e);
    }
  }
  let r5;
  try {
    r5 = note(await agent.call({ role: "explorer", node: "n5", prompt: "task 5 of n5", schema: schemas.findingTriage }));
  } catch (e) {
    caught("call", e);
    r5 = { status: "thrown", reason: null, handle: null, output: null };
  }
  await settle(r5);
  const r6 = note(await agent.call({ role: "reviewer", node: "n1", prompt: "task 6 of n1" }));
  await settle(r6);
  return out;
}
