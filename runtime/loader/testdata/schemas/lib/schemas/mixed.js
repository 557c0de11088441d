export const plan = { type: "object", additionalProperties: false, properties: {} };
export const version = 3;
export const tags = ["a"];
