package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/crw-dev/crw/engine"
)

// benchScript issues input.n calls, input.width at a time, each answered at once by the fake
// backend with a ~200-byte object, as go-workflows' peer benchmark's activities answer.
const benchScript = `
import { agent } from "crw:agent";
const schema = {
  type: "object", additionalProperties: false, required: ["status", "summary", "files"],
  properties: {
    status: { type: "string", enum: ["done", "partial"] },
    summary: { type: "string" },
    files: { type: "array", items: { type: "string" } },
  },
};
export default async function main({ n, width }) {
  let done = 0;
  for (let i = 0; i < n; i += width) {
    const batch = [];
    for (let j = i; j < Math.min(n, i + width); j++) {
      batch.push(agent.call({ role: "executor", node: "step", prompt: "Carry out step " + j, schema }));
    }
    for (const r of await Promise.all(batch)) if (r.status === "completed") done++;
  }
  return done;
}
`

const benchAnswers = `{"answers": [{"match": {}, "turns": [{"json": {"status": "done",
  "summary": "Carried out the step as planned; the tests that cover it pass.",
  "files": ["internal/runner/runner.go", "internal/runner/runner_test.go", "cmd/tool/main.go"]},
  "tokens": {"input": 100, "output": 50}}]}]}`

func benchmarkCalls(b *testing.B, width int) {
	dir := b.TempDir()
	wf := filepath.Join(dir, "bench.js")
	if err := os.WriteFile(wf, []byte(benchScript), 0o600); err != nil {
		b.Fatal(err)
	}
	answers := filepath.Join(dir, "answers.json")
	if err := os.WriteFile(answers, []byte(benchAnswers), 0o600); err != nil {
		b.Fatal(err)
	}
	input, _ := json.Marshal(map[string]int{"n": b.N, "width": width})
	b.ReportAllocs()
	b.ResetTimer()
	res, err := engine.Run(context.Background(), engine.Options{
		StateDir: filepath.Join(dir, "state"), Workflow: wf, Input: input,
		Answers: answers, Pool: width,
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if res.Status != engine.RunCompleted || string(res.Result) != fmt.Sprint(b.N) {
		b.Fatalf("run %s: %s %s %+v", res.Run, res.Status, res.Result, res.Error)
	}
}

// BenchmarkCall is one completed call on the fake backend with the on-disk journal: the whole
// run (load, start, N calls, end) divided by N.
func BenchmarkCall(b *testing.B) {
	b.Run("sequential", func(b *testing.B) { benchmarkCalls(b, 1) })
	b.Run("inflight16", func(b *testing.B) { benchmarkCalls(b, 16) })
}
