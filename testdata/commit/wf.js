// The commit workflow: two nodes built in their worktrees, a review of one, three crw.commit
// calls and an executor that commits on its own. Its result depends on nothing but the answers.
import { agent } from "crw:agent";
import crw from "crw";

export default async function main() {
  const api = await agent.call({ role: "executor", node: "api", prompt: "write the api" });
  const review = await agent.call({ role: "reviewer", node: "api", prompt: "review the api" });
  const first = await crw.commit("api", { message: "the api" });
  const [docs, fix] = await Promise.all([
    agent.call({ role: "executor", node: "docs", prompt: "write the docs" }),
    agent.call({ role: "executor", node: "api", prompt: "fix the api" }),
  ]);
  const second = await crw.commit("api", { message: "the api, fixed" });
  const third = await crw.commit("docs", { message: "the docs" });
  return {
    statuses: [api.status, review.status, docs.status, fix.status],
    trees: [first.tree, second.tree, third.tree],
    chained: second.parent === first.commit,
  };
}
