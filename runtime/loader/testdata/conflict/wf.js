import * as schemas from "crw:lib/schemas";

export default function main() {
  return schemas;
}
