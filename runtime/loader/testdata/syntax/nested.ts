import main from "./bad.js";
export default main;
