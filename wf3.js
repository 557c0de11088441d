import { review } from "crw:lib/schemas/cjs";
export default async function main() { return 1 }
