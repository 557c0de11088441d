// triage: several reviewers look at the same change in parallel, each through one lens; a
// critic then triages everything they found into findings to keep and findings to drop.
//
//   crw flow run workflows/triage.ts --input '{"target": "the retry logic in client.go"}'
import { agent } from "crw:agent";
import * as schemas from "crw:lib/schemas";

interface Input {
  target: string;
  lenses: string[];
}

interface Finding {
  id: string;
  lens: string;
  severity: "critical" | "major" | "minor" | "nit";
  title: string;
  detail: string;
}

const defaults: Input = {
  target: "the change on the current branch",
  lenses: ["correctness", "security", "performance"],
};

export default async function main(input: Partial<Input> | null): Promise<object> {
  const { target, lenses } = { ...defaults, ...(input ?? {}) };

  // Every lens is reviewed at once; the run's --pool bounds how many run together.
  const reviews = await Promise.all(
    lenses.map((lens) =>
      agent.call({
        role: "reviewer",
        node: `review-${lens}`,
        prompt: `Review ${target}. Look only at ${lens}: report every ${lens} problem you find, and nothing else.`,
        schema: schemas.reviewVerdict,
      }),
    ),
  );

  const findings: Finding[] = [];
  const unreviewed: { lens: string; status: string; reason: string | null }[] = [];
  reviews.forEach((r, i) => {
    if (r.status !== "completed") {
      unreviewed.push({ lens: lenses[i], status: r.status, reason: r.reason });
      return;
    }
    for (const f of r.output.findings) {
      // Ids are unique per review only; prefix them with the lens so the critic can name them.
      findings.push({ id: `${lenses[i]}/${f.id}`, lens: lenses[i], severity: f.severity, title: f.title, detail: f.detail });
    }
  });
  if (findings.length === 0) {
    return { target, kept: [], dropped: [], unreviewed };
  }

  const triage = await agent.call({
    role: "critic",
    node: "triage",
    prompt: [
      `These findings were reported on ${target}. Keep the ones that are real and worth fixing;`,
      "drop duplicates, mistakes and matters of taste. Give one entry for every finding.",
      "",
      ...findings.map((f) => `- ${f.id} [${f.severity}] ${f.title}: ${f.detail}`),
    ].join("\n"),
    schema: schemas.findingTriage,
  });
  if (triage.status !== "completed") {
    return { target, triage: { status: triage.status, reason: triage.reason }, findings: findings.length, unreviewed };
  }
  const byId = new Map(findings.map((f) => [f.id, f] as const));
  const pick = (action: "keep" | "drop") =>
    triage.output.findings
      .filter((t: { action: string }) => t.action === action)
      .map((t: { id: string; reason: string }) => ({ ...byId.get(t.id), reason: t.reason }));
  return { target, kept: pick("keep"), dropped: pick("drop"), unreviewed };
}
