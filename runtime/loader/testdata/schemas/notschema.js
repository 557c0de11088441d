import { plan } from "crw:lib/schemas/mixed";
export default () => plan;
