import data from "./bad.json";
export default () => data;
