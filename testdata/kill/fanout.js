// The fan-out workflow of the kill tests: three executors build three nodes at once, each in a
// worktree of its own, a reviewer reviews each node's pending work in a checkout of it while the
// other nodes are still being built, crw.commit keeps each node, and three more reviewers look
// at the kept nodes at once. Worktrees and checkouts are made concurrently all along. Its result
// depends on nothing but the answers.
import { agent } from "crw:agent";
import crw from "crw";

const nodes = ["alpha", "beta", "gamma"];

async function chain(node) {
  const build = await agent.call({ role: "executor", node, prompt: `build ${node}` });
  const review = await agent.call({ role: "reviewer", node, prompt: `review ${node}` });
  const kept = await crw.commit(node, { message: `the ${node} change` });
  return { node, build: build.status, review: review.status, tree: kept.tree };
}

export default async function main() {
  const chains = await Promise.all(nodes.map(chain));
  const finals = await Promise.all(nodes.map((node) => agent.call({ role: "reviewer", node, prompt: `review ${node} as kept` })));
  return { chains, finals: finals.map((f) => f.status) };
}
