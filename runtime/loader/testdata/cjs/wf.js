"use strict";
const { agent } = require("crw:agent");
const helper = require("./helper.cjs");
const data = require("./data.json");

module.exports = async function main(input) {
  const res = await agent.call({ role: "critic", prompt: input.task, node: "review" });
  return { node: res.node, greeting: helper.greet(input.task), size: data.length };
};
