export const plan = { type: "object", additionalProperties: false };
