package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The workflows of the memory and scaling benchmarks: n calls one after the other, and n
// calls all issued at once (Promise.all, the pool bounding what is in flight). No answers
// file: the fake backend synthesizes each answer.
const (
	sequentialScript = `
import { agent } from "crw:agent";
export default async function main({ n }) {
  let done = 0;
  for (let i = 0; i < n; i++) {
    const r = await agent.call({ role: "executor", node: "step", prompt: "Carry out step " + i });
    if (r.status === "completed") done++;
  }
  return done;
}
`
	fanOutScript = `
import { agent } from "crw:agent";
export default async function main({ n }) {
  const calls = [];
  for (let i = 0; i < n; i++) calls.push(agent.call({ role: "executor", node: "step", prompt: "Carry out step " + i }));
  let done = 0;
  for (const r of await Promise.all(calls)) if (r.status === "completed") done++;
  return done;
}
`
)

// processRun is one crw process's run of a workflow.
type processRun struct {
	state  string // the state folder
	run    string
	wall   time.Duration
	maxRSS int64 // bytes
}

// runProcess runs `crw flow run` on script with input n in a process of its own, in a new
// state folder under dir, and measures it through the peakrss built in dir (peakRSSBinary).
func runProcess(b *testing.B, dir, script string, n, pool int) processRun {
	b.Helper()
	wf := filepath.Join(dir, fmt.Sprintf("wf-%d.js", n))
	if err := os.WriteFile(wf, []byte(script), 0o600); err != nil {
		b.Fatal(err)
	}
	state := filepath.Join(dir, fmt.Sprintf("state-%d-%d", n, time.Now().UnixNano()))
	cmd := exec.Command("crw", "--json", "--state", state, "flow", "run", wf, "--pool", fmt.Sprint(pool), "--input", fmt.Sprintf(`{"n":%d}`, n))
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	wall, rss, err := measured(b, filepath.Join(dir, "peakrss"), cmd)
	var res struct {
		Run    string          `json:"run"`
		Status string          `json:"status"`
		Result json.RawMessage `json:"result"`
	}
	if err != nil || json.Unmarshal(out.Bytes(), &res) != nil || res.Status != "completed" || string(res.Result) != fmt.Sprint(n) {
		b.Fatalf("crw flow run (n=%d): %v\n%s\n%s", n, err, out.String(), errOut.String())
	}
	return processRun{state: state, run: res.Run, wall: wall, maxRSS: rss}
}

// BenchmarkSequentialProcess runs 1,000 and then 100,000 sequential calls, each as a whole
// `crw flow run` process on the on-disk journal, and reports the peak RSS of each and the time
// per call of each: the targets are under 150 MB at 100,000 calls, and the time per
// call at 100,000 within 1.3× of that at 1,000 (the ratio, "x-per-call"). CRW_BENCH_CALLS
// sets the larger count (e.g. 10000 for a quicker look).
func BenchmarkSequentialProcess(b *testing.B) {
	large := 100000
	if v := os.Getenv("CRW_BENCH_CALLS"); v != "" {
		fmt.Sscan(v, &large)
	}
	dir := b.TempDir()
	peakRSSBinary(b, dir)
	for b.Loop() {
		small := runProcess(b, dir, sequentialScript, 1000, 4)
		big := runProcess(b, dir, sequentialScript, large, 4)
		perSmall := float64(small.wall.Nanoseconds()) / 1000
		perBig := float64(big.wall.Nanoseconds()) / float64(large)
		b.ReportMetric(float64(small.maxRSS)/1e6, "MB-rss-1k")
		b.ReportMetric(float64(big.maxRSS)/1e6, "MB-rss-large")
		b.ReportMetric(perSmall, "ns/call-1k")
		b.ReportMetric(perBig, "ns/call-large")
		b.ReportMetric(perBig/perSmall, "x-per-call")
		b.ReportMetric(float64(big.maxRSS-small.maxRSS)/float64(large-1000), "B-rss/call")
		os.RemoveAll(small.state)
		os.RemoveAll(big.state)
	}
}

// BenchmarkFanOutProcess runs 50,000 calls issued at once (Promise.all, pool 4) as a whole
// `crw flow run` process, beside 1,000 the same way, and reports the peak RSS of each: what
// grows with the calls is the script's own promises and results, not the engine's.
// CRW_BENCH_FANOUT sets the larger count.
func BenchmarkFanOutProcess(b *testing.B) {
	large := 50000
	if v := os.Getenv("CRW_BENCH_FANOUT"); v != "" {
		fmt.Sscan(v, &large)
	}
	dir := b.TempDir()
	peakRSSBinary(b, dir)
	for b.Loop() {
		small := runProcess(b, dir, fanOutScript, 1000, 4)
		big := runProcess(b, dir, fanOutScript, large, 4)
		b.ReportMetric(float64(small.maxRSS)/1e6, "MB-rss-1k")
		b.ReportMetric(float64(big.maxRSS)/1e6, "MB-rss-large")
		b.ReportMetric(float64(big.maxRSS-small.maxRSS)/float64(large-1000), "B-rss/call")
		b.ReportMetric(float64(big.wall.Nanoseconds())/float64(large), "ns/call-large")
		os.RemoveAll(small.state)
		os.RemoveAll(big.state)
	}
}

// BenchmarkStatusOfLargeRun is `crw flow status` and `crw flow list` of an ended run of
// CRW_BENCH_CALLS (default 100,000) sequential calls, each a whole process: they read the
// journal's summary, not its rows (target: under 20 ms).
func BenchmarkStatusOfLargeRun(b *testing.B) {
	large := 100000
	if v := os.Getenv("CRW_BENCH_CALLS"); v != "" {
		fmt.Sscan(v, &large)
	}
	dir := b.TempDir()
	peakRSSBinary(b, dir)
	r := runProcess(b, dir, sequentialScript, large, 4)
	for _, args := range [][]string{{"flow", "status", r.run}, {"flow", "list"}} {
		b.Run(args[1], func(b *testing.B) {
			var rss int64
			for b.Loop() {
				cmd := exec.Command("crw", append([]string{"--json", "--state", r.state}, args...)...)
				cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				_, peak, err := measured(b, filepath.Join(dir, "peakrss"), cmd)
				if err != nil || !strings.Contains(out.String(), fmt.Sprintf(`"completed":%d`, large)) {
					b.Fatalf("crw %v: %v\n%s", args, err, out.String())
				}
				rss = max(rss, peak)
			}
			b.ReportMetric(float64(rss)/1e6, "MB-rss")
		})
	}
}
