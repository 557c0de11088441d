import { review } from "./helper";

export default function main() {
  return review;
}
