import _ from "lodash";

export default function main() {
  return _;
}
