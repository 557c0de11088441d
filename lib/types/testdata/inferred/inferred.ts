// Answers typed from their schemas: this must compile under strict, with no implicit any
// (types_test.go). Eq fails to compile (TS2344) where an inferred type is not the one expected.
import { agent, schema, type FromSchema, type Schema } from "crw:agent";
import crw from "crw";
import * as schemas from "crw:lib/schemas";
import { review } from "crw:lib/schemas/review";

type Eq<A, B> = (<X>() => X extends A ? 1 : 2) extends (<X>() => X extends B ? 1 : 2) ? true : false;
function expect<T extends true>(): void {}

type Finding = { readonly line: number; readonly file: string | null; readonly kind: "bug"; readonly note?: string };
expect<Eq<FromSchema<typeof review>, {
  readonly verdict: "approve" | "request_changes";
  readonly findings: readonly Finding[];
  readonly summary: string | null;
}>>();

// Built at run time: no type reaches it, so it says what it answers.
function counted(field: string): Schema<{ readonly [field: string]: number }> {
  return { type: "object", properties: { [field]: { type: "integer" } }, required: [field], additionalProperties: false };
}

export default async function main() {
  const r = await agent.call({ role: "reviewer", prompt: "Review it.", schema: review });
  if (r.status !== "completed") return r.reason;
  const lines = r.output.findings.map((f) => f.line);
  expect<Eq<typeof lines, number[]>>();
  expect<Eq<typeof r.output.verdict, "approve" | "request_changes">>();
  const note = r.output.findings[0].note;
  expect<Eq<typeof note, string | undefined>>();

  // Written in the call: inferred as if `as const`.
  const inline = await agent.call({
    role: "explorer",
    prompt: "Count.",
    schema: { type: "object", properties: { n: { type: "number" }, tags: { type: "array", items: { type: "string" } } }, required: ["n", "tags"], additionalProperties: false },
  });
  if (inline.status === "completed") expect<Eq<typeof inline.output, { readonly n: number; readonly tags: readonly string[] }>>();

  // schema(): a built-in schema inside one keeps its type.
  const both = schema({ type: "object", properties: { ok: { type: "boolean" }, plan: schemas.plan }, required: ["ok", "plan"], additionalProperties: false });
  const b = await agent.call({ role: "architect", prompt: "Plan.", schema: both });
  if (b.status === "completed") expect<Eq<typeof b.output, { readonly ok: boolean; readonly plan: schemas.Plan }>>();

  // The built-in schemas answer their declared types, as before.
  const p = await agent.call({ role: "architect", prompt: "Plan.", schema: schemas.plan });
  if (p.status === "completed") expect<Eq<typeof p.output, schemas.Plan>>();

  const c = await agent.call({ role: "explorer", prompt: "Count.", schema: counted("files") });
  if (c.status === "completed") expect<Eq<typeof c.output, { readonly [field: string]: number }>>();

  // Without a schema the answer is text; with one that may be null, either.
  const t = await agent.call({ role: "explorer", prompt: "Say hi." });
  if (t.status === "completed") expect<Eq<typeof t.output, string>>();
  const m = await agent.call({ role: "explorer", prompt: "Maybe.", schema: crw.random() < 0.5 ? both : null });
  if (m.status === "completed") expect<Eq<typeof m.output, string | FromSchema<typeof both>>>();

  // A recursive schema: typed as deep as tsc goes, then unknown.
  const tree = schema({
    type: "object", properties: { kids: { type: "array", items: { $ref: "#/$defs/node" } } }, required: ["kids"], additionalProperties: false,
    $defs: { node: { type: "object", properties: { kids: { type: "array", items: { $ref: "#/$defs/node" } } }, required: ["kids"], additionalProperties: false } },
  });
  const n = await agent.call({ role: "explorer", prompt: "Tree.", schema: tree });
  if (n.status === "completed") {
    const count = n.output.kids[0].kids[0].kids.length;
    expect<Eq<typeof count, number>>();
    const deep = n.output.kids[0].kids[0].kids[0].kids[0].kids[0].kids[0].kids[0].kids[0];
    expect<Eq<typeof deep, unknown>>();
  }

  const yes = await crw.decide({ id: "go", question: "Go on?", schema: { type: "object", properties: { go: { type: "boolean" } }, required: ["go"], additionalProperties: false } });
  expect<Eq<typeof yes, { readonly go: boolean }>>();
  return yes.go ? lines.length : note;
}
