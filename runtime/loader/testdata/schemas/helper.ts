// Re-exports the schemas, so the workflow reaches them only through here.
export { review } from "crw:lib/schemas/review";
export * as all from "crw:lib/schemas/review";
