// Misreadings of answers typed from their schemas that tsc must find (types_test.go lists them).
import { agent } from "crw:agent";
const review = { type: "object", properties: { verdict: { type: "string", enum: ["approve", "reject"] }, summary: { type: ["string", "null"] }, findings: { type: "array", items: { type: "object", properties: { line: { type: "integer" }, title: { type: "string" }, note: { type: "string" } }, required: ["line", "title"], additionalProperties: false } } }, required: ["verdict", "summary", "findings"], additionalProperties: false } as const;
export default async function main() {
  const r = await agent.call({ role: "reviewer", prompt: "Review it.", schema: review });
  if (r.status !== "completed") return null;
  const line: number = r.output.findings[0].title;
  const severity = r.output.severity;
  if (r.output.verdict === "approved") return 1;
  const size = r.output.summary.length;
  const noted = r.output.findings[0].note.length;
  const t = await agent.call({ role: "explorer", prompt: "Say hi." });
  if (t.status === "completed") return t.output.verdict;
  return [line, severity, size, noted];
}
