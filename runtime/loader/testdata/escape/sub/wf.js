import { secret } from "../outside.js";

export default function main() {
  return secret;
}
