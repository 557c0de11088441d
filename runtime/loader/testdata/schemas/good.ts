import schemas, { verdict, strict } from "crw:lib/schemas/ok";

export default function main() {
  return [schemas.verdict === verdict, strict({ a: { type: "string" } }).additionalProperties];
}
