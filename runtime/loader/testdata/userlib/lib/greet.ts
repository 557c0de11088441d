import { prefix } from "./prefix";

export function greet(who: string): string {
  return prefix + who;
}
