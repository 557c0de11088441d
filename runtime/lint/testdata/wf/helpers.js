import { agent } from "crw:agent";
export const looseSchema = { type: "object", properties: {} , required: [] };
export function later() {
  return agent.call({ role: "critic", prompt: "hi", modle: "x" });
}
