// A crw: name that does not exist.
import { x } from "crw:nope";

export default function main() {
  return x;
}
