package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/internal/etcdtest"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/etcd"
	"github.com/crw-dev/crw/store/etcd/etcdrpc"
)

// BenchmarkWorkersOnEtcd is what 3 workers (crw worker --slots 4, each a process with a state
// folder of its own, as on three hosts) sustain on a 3-member etcd cluster: 100 queued runs of
// 10 sequential calls each on the fake backend, from the workers' start to the last run's end.
// Reported: runs/s and calls/s.
func BenchmarkWorkersOnEtcd(b *testing.B) {
	const runs, calls, workers = 100, 10, 3
	bin := crwBinary(b)
	c := etcdtest.Start(b, 3)
	address := "etcd://" + strings.TrimPrefix(c.Members[0].ClientURL, "http://") + "/bench"
	ctx := context.Background()
	st, err := etcd.Open(ctx, c.Client(b), "/bench")
	if err != nil {
		b.Fatal(err)
	}
	svc := &engine.Service{Store: st, Backends: enginetest.Backends()}
	dir := b.TempDir()
	wf := filepath.Join(dir, "wf.js")
	if err := os.WriteFile(wf, []byte(sequentialScript), 0o600); err != nil {
		b.Fatal(err)
	}
	input, _ := json.Marshal(map[string]int{"n": calls})
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		var ids []string
		for range runs {
			id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Input: input, Backend: "fake"})
			if err != nil {
				b.Fatal(err)
			}
			ids = append(ids, id)
		}
		start := time.Now()
		var procs []*exec.Cmd
		for w := range workers {
			cmd := exec.Command(bin, "worker", "--slots", "4")
			cmd.Env = append(os.Environ(), "CRW_STORE="+address, "CRW_STATE="+filepath.Join(dir, fmt.Sprintf("host%d-%d", w, i)))
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			procs = append(procs, cmd)
		}
		for left := ids; len(left) > 0; {
			var still []string
			for _, id := range left {
				s, err := svc.Status(ctx, id)
				if err != nil {
					b.Fatal(err)
				}
				switch {
				case s.State != store.StateEnded:
					still = append(still, id)
				case s.Status != store.RunCompleted:
					b.Fatalf("run %s ended %s: %+v", id, s.Status, s.Error)
				}
			}
			left = still
			if len(left) > 0 {
				time.Sleep(50 * time.Millisecond) // a benchmark's look, not a test's wait
			}
		}
		elapsed += time.Since(start)
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGTERM)
			_ = p.Wait()
		}
	}
	b.ReportMetric(float64(runs*b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(float64(runs*calls*b.N)/elapsed.Seconds(), "calls/s")
}

// BenchmarkResumeFromEtcd is the resume of a run of n calls kept on an etcd cluster (1 and 3
// members), as a whole crw process from exec to exit: the run waits for its last decision,
// answered, and crw flow resume --store replays every call from the cluster's rows and returns.
// Each resume starts from the same keys: the run's keys are put back as they were before it.
// Reported: ns/call; BenchmarkReplayProcess/resume is the same on the state folder. (No peak
// RSS: a child's, as Linux counts it, is at least its parent's at the fork, and this benchmark
// holds the run's keys.)
func BenchmarkResumeFromEtcd(b *testing.B) {
	bin := crwBinary(b)
	for _, members := range []int{1, 3} {
		c := etcdtest.Start(b, members)
		cli := c.Client(b)
		address := "etcd://" + strings.Join(memberAddrs(c), ",") + "/bench"
		for _, n := range replayCounts(b) {
			dir := b.TempDir()
			wf := filepath.Join(dir, "replay.js")
			answers := filepath.Join(dir, "answers.json")
			for path, text := range map[string]string{wf: replayBenchScript, answers: replayBenchAnswers} {
				if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
					b.Fatal(err)
				}
			}
			state := filepath.Join(dir, "state")
			out, err := exec.Command(bin, "--json", "--state", state, "--store", address, "flow", "run", wf, "--no-repo", "--answers", answers,
				"--input", fmt.Sprintf(`{"n":%d}`, n)).Output()
			var res struct{ Run, Status string }
			if json.Unmarshal(out, &res) != nil || res.Status != "waiting_decision" {
				b.Fatalf("crw flow run (n=%d): %v\n%s", n, err, out)
			}
			if out, err := exec.Command(bin, "--state", state, "--store", address, "flow", "answer", res.Run, "finish", "--value", `{"ok":true}`, "--no-resume").CombinedOutput(); err != nil {
				b.Fatalf("crw flow answer: %v\n%s", err, out)
			}
			ctx := context.Background()
			prefix := "/bench/runs/" + res.Run + "/"
			kept, err := cli.Get(ctx, prefix, etcdrpc.WithPrefix())
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("members=%d/calls=%d", members, n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					if _, err := cli.Delete(ctx, prefix, etcdrpc.WithPrefix()); err != nil {
						b.Fatal(err)
					}
					for k := 0; k < len(kept.Kvs); k += 100 {
						var ops []etcdrpc.Op
						for _, kv := range kept.Kvs[k:min(k+100, len(kept.Kvs))] {
							ops = append(ops, etcdrpc.OpPut(string(kv.Key), string(kv.Value)))
						}
						if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
					timedProcess(b, bin, fmt.Sprintf(`"result":%d`, n), "--json", "--state", state, "--store", address, "flow", "resume", res.Run)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/call")
			})
		}
	}
}
