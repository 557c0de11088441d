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
