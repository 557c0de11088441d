import { crw } from "crw";
export default async function main() { return crw.now(); }
