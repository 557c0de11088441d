// A schema module of the workflow's own, written `as const`: its answers' type is inferred.
export const review = {
  type: "object",
  properties: {
    verdict: { type: "string", enum: ["approve", "request_changes"], description: "The outcome." },
    findings: { type: "array", items: { $ref: "#/$defs/finding" }, description: "Most severe first." },
    summary: { type: ["string", "null"], description: "The assessment, or null." },
  },
  required: ["verdict", "findings", "summary"],
  additionalProperties: false,
  $defs: {
    finding: {
      type: "object",
      properties: {
        line: { type: "integer", minimum: 1, description: "The line." },
        file: { anyOf: [{ type: "string" }, { type: "null" }], description: "The file, or null." },
        kind: { const: "bug", description: "Always bug." },
        // Not required: the strict rules refuse it at run time, but the type reads it as optional.
        note: { type: "string", description: "Anything else." },
      },
      required: ["line", "file", "kind"],
      additionalProperties: false,
    },
  },
} as const;
