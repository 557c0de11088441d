package enginetest

import (
	"flag"
	"os"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/crw-dev/crw/internal/gctune"
)

// BenchScript issues input.n calls, input.width at a time, each answered at once by the fake
// backend with a ~200-byte object, as go-workflows' peer benchmark's activities answer.
const BenchScript = `
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
      batch.push(agent.call({ role: "critic", node: "step", prompt: "Carry out step " + j, schema }));
    }
    for (const r of await Promise.all(batch)) if (r.status === "completed") done++;
  }
  return done;
}
`

// BenchAnswers answers every call of BenchScript.
const BenchAnswers = `{"answers": [{"match": {}, "turns": [{"json": {"status": "done",
  "summary": "Carried out the step as planned; the tests that cover it pass.",
  "files": ["internal/runner/runner.go", "internal/runner/runner_test.go", "cmd/tool/main.go"]},
  "tokens": {"input": 100, "output": 50}}]}]}`

// TuneGCAsCrw runs a benchmark with the collector tuned as crw's process tunes it, its heap
// readied for huge pages as that of a crw command that runs workflows, and no heap profile
// sampled (crw's process samples none; a test binary samples one allocation each 512 KiB,
// a stack recorded for each, ~3% of a call) unless the benchmark writes one (-memprofile).
func TuneGCAsCrw(b *testing.B) {
	if f := flag.Lookup("test.memprofile"); f == nil || f.Value.String() == "" {
		old := runtime.MemProfileRate
		runtime.MemProfileRate = 0
		b.Cleanup(func() { runtime.MemProfileRate = old })
	}
	gctune.LargeHeap()
	if os.Getenv("GOGC") == "" {
		old := debug.SetGCPercent(gctune.ProcessPercent)
		b.Cleanup(func() { debug.SetGCPercent(old) })
	}
}
