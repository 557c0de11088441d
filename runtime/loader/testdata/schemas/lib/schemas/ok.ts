export const verdict = {
  type: "object",
  additionalProperties: false,
  required: ["ok"],
  properties: { ok: { type: "boolean" } },
};

// Helpers are functions and are not checked.
export function strict(properties: Record<string, unknown>) {
  return { type: "object", additionalProperties: false, required: Object.keys(properties), properties };
}

// A namespace of the named exports is not a schema of its own.
export default { verdict };
