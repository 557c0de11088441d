export const review = {
  type: "object",
  additionalProperties: false,
  required: ["findings"],
  properties: {
    findings: {
      type: "array",
      items: { type: "object", properties: { line: { type: "integer" } } },
    },
  },
};
