package vm_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/crw-dev/crw/lib"
	"github.com/crw-dev/crw/runtime/runtimetest"
	"github.com/crw-dev/crw/runtime/vm"
)

// benchWorkflow is a plan, build and review workflow of about fifty lines.
const benchWorkflow = `import { agent } from "crw:agent";
import crw from "crw";
import * as schemas from "crw:lib/schemas";

const MAX_ROUNDS = 2;

function prompt(role, task, extra = {}) {
  const lines = [` + "`You are the ${role}.`, `Task: ${task}`" + `];
  for (const [k, v] of Object.entries(extra)) {
    lines.push(` + "`${k}: ${typeof v === \"string\" ? v : JSON.stringify(v)}`" + `);
  }
  return lines.join("\n");
}

async function build(task, step) {
  const res = await agent.call({
    role: "executor",
    prompt: prompt("executor", task, { step: step.title, details: step.description }),
    schema: schemas.buildReport,
    node: "build-" + step.id,
  });
  return res.status === "completed" ? res.output : { status: "blocked", notes: res.reason };
}

async function review(task, reports) {
  const res = await agent.call({ role: "reviewer", prompt: prompt("reviewer", task, { reports }), schema: schemas.reviewVerdict, node: "review" });
  return res.status === "completed" ? res.output.verdict : "request_changes";
}

export default async function main(input) {
  crw.log("starting", input.task);
  const plan = await agent.call({ role: "architect", prompt: prompt("architect", input.task), schema: schemas.plan, node: "plan" });
  if (plan.status !== "completed") {
    return { failed: plan.reason };
  }
  const steps = plan.output.steps;
  let verdict = "request_changes";
  let round = 0;
  while (verdict !== "approve" && round < MAX_ROUNDS) {
    round++;
    const reports = await Promise.all(steps.map((step) => build(input.task, step)));
    verdict = await review(input.task, reports.map((r) => r.status));
    crw.commit("round-" + round, verdict);
  }
  return { verdict, rounds: round, steps: steps.length, at: crw.now() };
}
`

// benchResult answers each call with an output that fits its node.
func benchResult(c runtimetest.Call) json.RawMessage {
	var output any
	switch c.Request.Node {
	case "plan":
		output = map[string]any{"summary": "s", "risks": []string{}, "steps": []any{
			map[string]any{"id": "s1", "title": "one", "description": "d", "files": []string{"a.go"}},
			map[string]any{"id": "s2", "title": "two", "description": "d", "files": []string{}},
			map[string]any{"id": "s3", "title": "three", "description": "d", "files": []string{}},
		}}
	case "review":
		output = map[string]any{"verdict": "approve", "summary": "ok", "findings": []any{}}
	default:
		output = map[string]any{"status": "done", "summary": "s", "filesChanged": []string{}, "testsRun": []any{}, "notes": nil}
	}
	return runtimetest.Completed(c, output, "c")
}

func BenchmarkStartup(b *testing.B) {
	dir := b.TempDir()
	wf := filepath.Join(dir, "wf.js")
	if err := os.WriteFile(wf, []byte(benchWorkflow), 0o644); err != nil {
		b.Fatal(err)
	}
	cfg := func(h *runtimetest.Host) vm.Config {
		return vm.Config{Workflow: wf, Builtin: lib.FS, Input: json.RawMessage(`{"task":"add a flag"}`), Seed: 1, Host: h}
	}

	b.Run("load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := vm.New(cfg(runtimetest.NewHost())); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("load+run", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h := runtimetest.NewHost()
			h.Result = benchResult
			v, err := vm.New(cfg(h))
			if err != nil {
				b.Fatal(err)
			}
			out, err := v.Run(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if len(h.Requests()) != 5 {
				b.Fatalf("%d calls, result %s", len(h.Requests()), out)
			}
		}
	})
}
