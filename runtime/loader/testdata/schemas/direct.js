import { review } from "crw:lib/schemas/review";
export default () => review;
