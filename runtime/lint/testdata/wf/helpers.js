export const looseSchema = { type: "object", properties: {} , required: [] };
export function later(agent) {
  return agent.call({ role: "critic", prompt: "hi", modle: "x" });
}
