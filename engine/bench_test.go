package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
	"github.com/crw-dev/crw/store/local/journalfile"
)

func benchmarkCalls(b *testing.B, width int) {
	enginetest.TuneGCAsCrw(b)
	dir := b.TempDir()
	wf := filepath.Join(dir, "bench.js")
	if err := os.WriteFile(wf, []byte(enginetest.BenchScript), 0o600); err != nil {
		b.Fatal(err)
	}
	answers := filepath.Join(dir, "answers.json")
	if err := os.WriteFile(answers, []byte(enginetest.BenchAnswers), 0o600); err != nil {
		b.Fatal(err)
	}
	input, _ := json.Marshal(map[string]int{"n": b.N, "width": width})
	b.ReportAllocs()
	b.ResetTimer()
	svc := localService(b, filepath.Join(dir, "state"))
	res, err := svc.Run(context.Background(), engine.CreateOptions{
		Workflow: wf, Input: input, BackendOpts: map[string]string{"answers": answers}, Pool: new(width),
	}, engine.ExecOptions{})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if res.Status != store.RunCompleted || string(res.Result) != fmt.Sprint(b.N) {
		b.Fatalf("run %s: %s %s %+v", res.Run, res.Status, res.Result, res.Error)
	}
}

// BenchmarkCall is one completed call on the fake backend with the on-disk journal: the whole
// run (load, start, N calls, end) divided by N.
func BenchmarkCall(b *testing.B) {
	b.Run("sequential", func(b *testing.B) { benchmarkCalls(b, 1) })
	b.Run("inflight16", func(b *testing.B) { benchmarkCalls(b, 16) })
}

// replayScript issues input.n calls one after another, as a long workflow does.
const replayScript = `
import { agent } from "crw:agent";
import { buildReport } from "crw:lib/schemas";
export default async function main({ n }) {
  let done = 0;
  for (let i = 0; i < n; i++) {
    const r = await agent.call({ role: "critic", node: "step", prompt: "Carry out step " + i, schema: buildReport });
    if (r.status === "completed" && r.output.filesChanged.length > 0) done++;
  }
  return done;
}
`

// buildAnswers answers every call with a ~250-byte build report.
const buildAnswers = `{"answers": [{"match": {}, "turns": [{"json": {"status": "done",
  "summary": "Carried out the step as planned; the tests that cover it pass.",
  "filesChanged": ["internal/runner/runner.go", "internal/runner/runner_test.go"],
  "testsRun": [{"command": "go test ./internal/runner/", "passed": true}], "notes": null},
  "tokens": {"input": 100, "output": 50}}]}]}`

func localService(b testing.TB, root string) *engine.Service {
	st, err := local.New(root)
	if err != nil {
		b.Fatal(err)
	}
	return enginetest.Service(st)
}

// recordedRun runs the replay script live once for n calls and returns its service, the run,
// its journal's rows without the ended row (a run whose process died at its very end), and the
// workflow file.
func recordedRun(b *testing.B, n int) (svc *engine.Service, run string, rows []journal.Row, wf string) {
	b.Helper()
	dir := b.TempDir()
	wf = filepath.Join(dir, "replay.js")
	answers := filepath.Join(dir, "answers.json")
	if err := os.WriteFile(wf, []byte(replayScript), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(answers, []byte(buildAnswers), 0o600); err != nil {
		b.Fatal(err)
	}
	svc = localService(b, filepath.Join(dir, "state"))
	input, _ := json.Marshal(map[string]int{"n": n})
	res, err := svc.Run(context.Background(), engine.CreateOptions{Workflow: wf, Input: input, BackendOpts: map[string]string{"answers": answers}}, engine.ExecOptions{})
	if err != nil || res.Status != store.RunCompleted {
		b.Fatalf("record: %v %+v", err, res)
	}
	all, err := svc.Rows(context.Background(), res.Run)
	if err != nil {
		b.Fatal(err)
	}
	return svc, res.Run, all[:len(all)-1], wf
}

// BenchmarkResume resumes a run whose journal holds n completed calls: the script runs from
// the top and every call resolves from the journal. ns/op is one whole resume.
func BenchmarkResume(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			enginetest.TuneGCAsCrw(b)
			svc, run, rows, _ := recordedRun(b, n)
			dir := svc.Store.(*local.Store).RunDir(run)
			spec, err := os.ReadFile(filepath.Join(dir, local.SpecFile))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				// A fresh copy of the unfinished run for every resume.
				if err := os.RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
				if err := os.MkdirAll(dir, 0o700); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, local.SpecFile), spec, 0o600); err != nil {
					b.Fatal(err)
				}
				j, err := journalfile.Create(filepath.Join(dir, local.JournalFile), run)
				if err != nil {
					b.Fatal(err)
				}
				ptrs := make([]*journal.Row, len(rows))
				for k := range rows {
					r := rows[k]
					ptrs[k] = &r
				}
				if _, err := j.Write(ptrs...); err != nil {
					b.Fatal(err)
				}
				if err := j.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				res, err := svc.Execute(context.Background(), run, engine.ExecOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if string(res.Result) != fmt.Sprint(n) {
					b.Fatalf("resume: %s %s %+v", res.Status, res.Result, res.Error)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/call")
		})
	}
}

// BenchmarkShadow replays the script against a trace of n calls with no backend: reading the
// trace (JSON Lines) and running the script. ns/op is one whole shadow replay.
func BenchmarkShadow(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			enginetest.TuneGCAsCrw(b)
			_, run, rows, wf := recordedRun(b, n)
			var trace bytes.Buffer
			if err := journal.Export(&trace, run, rows); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rows, err := journal.Import(bytes.NewReader(trace.Bytes()))
				if err != nil {
					b.Fatal(err)
				}
				rep, err := shadow.Run(context.Background(), shadow.Options{Script: wf, Rows: rows})
				if err != nil {
					b.Fatal(err)
				}
				if rep.Matched != n || len(rep.Divergences) != 0 {
					b.Fatalf("shadow: %+v", rep)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/call")
		})
	}
}
