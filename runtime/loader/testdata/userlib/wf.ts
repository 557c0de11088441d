import { greet } from "crw:lib/greet";
import { shout } from "crw:lib/shared/fmt";
import { y } from "crw:lib/x/y";

export default function main(input: { who: string }) {
  return shout(greet(input.who)) + y;
}
