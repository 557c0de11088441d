package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The workflow of the replay benchmarks: n sequential calls, each answered with a ~200-byte
// report (the size of the peers' canned reply), then a decision the run waits for. A resume
// after the answer replays the n calls and returns; a shadow replays them against the journal.
const replayBenchScript = `
import { agent } from "crw:agent";
import crw from "crw";
const report = { type: "object", properties: {
  status: { type: "string" }, summary: { type: "string" }, files: { type: "array", items: { type: "string" } },
}, required: ["status", "summary", "files"], additionalProperties: false };
export default async function main({ n }) {
  let done = 0;
  for (let i = 0; i < n; i++) {
    const r = await agent.call({ role: "reviewer", node: "step", prompt: "Review step " + i, schema: report });
    if (r.status === "completed" && r.output.files.length > 0) done++;
  }
  await crw.decide({ id: "finish", question: "Finish?", schema: { type: "object",
    properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false } });
  return done;
}
`

const replayBenchAnswers = `{"answers": [{"match": {}, "turns": [{"json": {"status": "done",
  "summary": "Reviewed the step as planned; the tests that cover it pass and nothing else changed.",
  "files": ["internal/runner/runner.go", "internal/runner/runner_test.go"]},
  "tokens": {"input": 100, "output": 50}}]}]}`

// crwBinary builds crw itself (not this test binary): a whole-process figure is crw's own
// start, its journal read and its VM, nothing of the test harness. It is built as the README
// builds it, static (CGO_ENABLED=0), with internal/peakrss beside it (timedProcess).
func crwBinary(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "crw")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	peakRSSBinary(b, filepath.Dir(bin))
	return bin
}

// processRecord is a run of n calls waiting for its last decision, answered, kept as a state
// folder to copy for each resume.
type processRecord struct {
	state, run, wf string
}

func recordForReplay(b *testing.B, bin, dir string, n int) processRecord {
	b.Helper()
	wf := filepath.Join(dir, "replay.js")
	answers := filepath.Join(dir, "answers.json")
	for path, text := range map[string]string{wf: replayBenchScript, answers: replayBenchAnswers} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	state := filepath.Join(dir, fmt.Sprintf("state-%d", n))
	out, err := exec.Command(bin, "--json", "--state", state, "flow", "run", wf, "--no-repo", "--answers", answers,
		"--input", fmt.Sprintf(`{"n":%d}`, n)).Output()
	var res struct {
		Run    string `json:"run"`
		Status string `json:"status"`
	}
	if json.Unmarshal(out, &res) != nil || res.Status != "waiting_decision" {
		b.Fatalf("crw flow run (n=%d): %v\n%s", n, err, out)
	}
	if out, err := exec.Command(bin, "--state", state, "flow", "answer", res.Run, "finish", "--value", `{"ok":true}`, "--no-resume").CombinedOutput(); err != nil {
		b.Fatalf("crw flow answer: %v\n%s", err, out)
	}
	syscall.Sync()
	return processRecord{state: state, run: res.Run, wf: wf}
}

// timedProcess runs crw with args and returns its wall time and peak RSS; want must be in its
// standard output.
func timedProcess(b *testing.B, bin, want string, args ...string) (time.Duration, int64) {
	b.Helper()
	cmd := exec.Command(bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// crwBinary builds peakrss beside crw.
	wall, rss, err := measured(b, filepath.Join(filepath.Dir(bin), "peakrss"), cmd)
	if err != nil || !strings.Contains(out.String(), want) {
		b.Fatalf("crw %v: %v\n%s%s", args, err, out.String(), errOut.String())
	}
	return wall, rss
}

// peakRSSBinary builds internal/peakrss into dir: a process the benchmarks measure is started
// through it, for its peak resident memory to be its own (see that command's doc).
func peakRSSBinary(b *testing.B, dir string) string {
	b.Helper()
	bin := filepath.Join(dir, "peakrss")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/crw-dev/crw/internal/peakrss")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build internal/peakrss: %v\n%s", err, out)
	}
	return bin
}

// measured runs cmd (its path, arguments, environment, directory and streams) through the
// peakrss at spawner and returns its wall time and peak RSS in bytes; the error is cmd's.
func measured(b *testing.B, spawner string, cmd *exec.Cmd) (time.Duration, int64, error) {
	b.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	via := exec.Command(spawner, append([]string{cmd.Path}, cmd.Args[1:]...)...)
	via.Env, via.Dir, via.Stdin, via.Stdout, via.Stderr = cmd.Env, cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr
	via.ExtraFiles = []*os.File{w}
	runErr := via.Run()
	w.Close()
	var wall time.Duration
	var rss int64
	if n, err := fmt.Fscan(r, &wall, &rss); n != 2 {
		b.Fatalf("peakrss %v gave no figures: %v (%v)", cmd.Args, err, runErr)
	}
	return wall, rss, runErr
}

// replayCounts are the run sizes of the replay benchmarks: CRW_BENCH_REPLAY (e.g.
// "100,1000,10000,100000"), else 100, 1,000 and 10,000.
func replayCounts(b *testing.B) []int {
	spec := os.Getenv("CRW_BENCH_REPLAY")
	if spec == "" {
		spec = "100,1000,10000"
	}
	var out []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("CRW_BENCH_REPLAY: %q is no count of calls", f)
		}
		out = append(out, n)
	}
	return out
}

// BenchmarkReplayProcess is the replay of a recorded run of n calls as whole crw processes,
// from exec to exit: a shadow replay of its journal (crw flow shadow), and a resume that
// replays every call and then returns (crw flow resume, each from a fresh copy of the run).
// Reported: ns/op and ns/call (crw's wall time from its exec to its exit, as internal/peakrss,
// which starts it, measures it), and its peak RSS (docs/architecture.md#performance); with
// CRW_PEER_TEMPORAL, Temporal's replayer on as many activities, measured after each, and the
// ratio (x-temporal: the goal is 6). The targets: under
// 0.15 s at 10,000 calls, the per-call cost at 100,000 within 1.3× of that at 100, peak RSS
// under 100 MB at 100,000.
func BenchmarkReplayProcess(b *testing.B) {
	bin := crwBinary(b)
	for _, n := range replayCounts(b) {
		dir := b.TempDir()
		rec := recordForReplay(b, bin, dir, n)
		b.Run(fmt.Sprintf("shadow/calls=%d", n), func(b *testing.B) {
			var rss int64
			var walls time.Duration
			for b.Loop() {
				w, r := timedProcess(b, bin, fmt.Sprintf(`"matched":%d`, n), "--json", "--state", rec.state, "flow", "shadow", rec.wf, "--run", rec.run)
				walls, rss = walls+w, max(rss, r)
			}
			perRun := float64(walls.Nanoseconds()) / float64(b.N)
			b.ReportMetric(perRun, "ns/op") // crw's own, not peakrss's start
			b.ReportMetric(perRun/float64(n), "ns/call")
			b.ReportMetric(float64(rss)/1e6, "MB-rss")
			if ms, ok := temporalReplay(b, n); ok {
				b.ReportMetric(ms, "temporal-ms")
				b.ReportMetric(ms*1e6/perRun, "x-temporal")
			}
		})
		b.Run(fmt.Sprintf("shadow-trace/calls=%d", n), func(b *testing.B) {
			trace := filepath.Join(dir, "trace.jsonl")
			if out, err := exec.Command(bin, "--state", rec.state, "flow", "trace", rec.run, "-o", trace).CombinedOutput(); err != nil {
				b.Fatalf("crw flow trace: %v\n%s", err, out)
			}
			var rss int64
			var walls time.Duration
			for b.Loop() {
				w, r := timedProcess(b, bin, fmt.Sprintf(`"matched":%d`, n), "--json", "--state", rec.state, "flow", "shadow", rec.wf, "--trace", trace)
				walls, rss = walls+w, max(rss, r)
			}
			perRun := float64(walls.Nanoseconds()) / float64(b.N)
			b.ReportMetric(perRun, "ns/op")
			b.ReportMetric(perRun/float64(n), "ns/call")
			b.ReportMetric(float64(rss)/1e6, "MB-rss")
		})
		b.Run(fmt.Sprintf("resume/calls=%d", n), func(b *testing.B) {
			var rss int64
			var walls time.Duration
			copyState := filepath.Join(dir, "resume-state")
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				os.RemoveAll(copyState)
				if out, err := exec.Command("cp", "-a", rec.state, copyState).CombinedOutput(); err != nil {
					b.Fatalf("cp: %v\n%s", err, out)
				}
				// A resumed run's journal has long been on disk: the copy's pages are written
				// out now, not by the resume's first fsync.
				syscall.Sync()
				b.StartTimer()
				w, r := timedProcess(b, bin, fmt.Sprintf(`"result":%d`, n), "--json", "--state", copyState, "flow", "resume", rec.run)
				walls, rss = walls+w, max(rss, r)
			}
			b.StopTimer() // the peer's run below is none of crw's time
			perRun := float64(walls.Nanoseconds()) / float64(b.N)
			b.ReportMetric(perRun, "ns/op") // crw's own, not peakrss's start
			b.ReportMetric(perRun/float64(n), "ns/call")
			b.ReportMetric(float64(rss)/1e6, "MB-rss")
			if ms, ok := temporalReplay(b, n); ok {
				b.ReportMetric(ms, "temporal-ms")
				b.ReportMetric(ms*1e6/perRun, "x-temporal")
			}
		})
	}
}

// temporalReplay is the median time, in ms, of the Temporal Go SDK's replayer on a history of n
// sequential activities, measured now by the peers' binary that CRW_PEER_TEMPORAL names
// (../shared/peers: go build ./cmd/temporal): only a ratio measured in one run means anything.
func temporalReplay(b *testing.B, n int) (float64, bool) {
	bin := os.Getenv("CRW_PEER_TEMPORAL")
	if bin == "" {
		return 0, false
	}
	out, err := exec.Command(bin, "-n", strconv.Itoa(n), "-json", "", "-reps", "5").Output()
	if err != nil {
		b.Fatalf("%s: %v", bin, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, "\t")
		if len(f) == 7 && strings.HasPrefix(f[0], "temporal/replay(") {
			ms, err := strconv.ParseFloat(f[3], 64)
			return ms, err == nil
		}
	}
	b.Fatalf("%s printed no replay figure:\n%s", bin, out)
	return 0, false
}

// BenchmarkReadProcess is what reading a run of n calls costs as a whole crw process, from
// exec to exit: crw flow status, list and inspect, which answer from what the journal's writer
// keeps beside the rows (the summary and its index), never from the rows. Reported: ns/op (one
// process, from its exec to its exit, as internal/peakrss measures it) and its peak RSS. The
// target: under 20 ms and 30 MB at 100,000 calls.
func BenchmarkReadProcess(b *testing.B) {
	bin := crwBinary(b)
	for _, n := range replayCounts(b) {
		rec := recordForReplay(b, bin, b.TempDir(), n)
		for _, c := range []struct {
			name, want string
			args       []string
		}{
			{"status", `"state"`, []string{"flow", "status", rec.run}},
			{"list", rec.run, []string{"flow", "list"}},
			{"inspect", `"in_flight"`, []string{"flow", "inspect", rec.run}},
		} {
			b.Run(fmt.Sprintf("%s/calls=%d", c.name, n), func(b *testing.B) {
				var rss int64
				var walls time.Duration
				for b.Loop() {
					w, r := timedProcess(b, bin, c.want, append([]string{"--json", "--state", rec.state}, c.args...)...)
					walls, rss = walls+w, max(rss, r)
				}
				b.ReportMetric(float64(walls.Nanoseconds())/float64(b.N), "ns/op") // crw's own, not peakrss's start
				b.ReportMetric(float64(rss)/1e6, "MB-rss")
			})
		}
	}
}
