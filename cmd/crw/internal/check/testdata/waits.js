import { agent } from "crw:agent";

export default async function main() {
  const look = await agent.call({ role: "explorer", prompt: "Look around." });
  if (look.status !== "completed") await new Promise(() => {}); // waits for nothing that comes
  return look.output;
}
