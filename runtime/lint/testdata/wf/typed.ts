import { agent, type CallResult } from "crw:agent";
import crw, { type Verdict, type   Decision } from "crw";
import { typeOf } from "crw:agent";

export default async function main(): Promise<string> {
  const r: CallResult = await agent.call({ role: "explorer", prompt: "look" });
  const v: Verdict | undefined = undefined;
  crw.log(String(v));
  return r.status;
}
