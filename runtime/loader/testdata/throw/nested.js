import main from "./top";

export default main;
