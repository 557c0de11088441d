import { crw } from "crw";
import {
  agent,
  nope as other, schema,
} from "crw:agent";
export default async function main() { return 1; }
