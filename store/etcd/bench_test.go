package etcd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/internal/etcdtest"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/etcd"
	"github.com/crw-dev/crw/store/etcd/etcdrpc"
)

// BenchmarkCallOnEtcd is one sequential call on the fake backend with its run on an etcd
// cluster of 1 and of 3 members (loopback, each member's own fsync), beside what etcd itself
// takes on the same cluster in the same run: a put and a transaction of the shape a commit has
// (a compare on the owner key, a few puts). Reported: ns/call; txns/call, the revisions a call
// adds (each write transaction is one); put-ns and txn-ns, etcd's own latency; and
// x-txns, a call's time over that of the transactions it needs (target: within 1.5).
func BenchmarkCallOnEtcd(b *testing.B) {
	for _, members := range []int{1, 3} {
		b.Run(fmt.Sprintf("members=%d", members), func(b *testing.B) {
			c := etcdtest.Start(b, members)
			cli := c.Client(b)
			ctx := context.Background()
			st, err := etcd.Open(ctx, cli, "/bench")
			if err != nil {
				b.Fatal(err)
			}
			putNs, txnNs := etcdLatency(b, cli, 200)

			dir := b.TempDir()
			wf := filepath.Join(dir, "bench.js")
			answers := filepath.Join(dir, "answers.json")
			if err := os.WriteFile(wf, []byte(enginetest.BenchScript), 0o600); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(answers, []byte(enginetest.BenchAnswers), 0o600); err != nil {
				b.Fatal(err)
			}
			input, _ := json.Marshal(map[string]int{"n": b.N, "width": 1})
			before, err := cli.Get(ctx, "/bench/none")
			if err != nil {
				b.Fatal(err)
			}
			svc := &engine.Service{Store: st, Backends: enginetest.Backends()}
			b.ResetTimer()
			res, err := svc.Run(ctx, engine.CreateOptions{Workflow: wf, Input: input, BackendOpts: map[string]string{"answers": answers}}, engine.ExecOptions{})
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if res.Status != store.RunCompleted || string(res.Result) != fmt.Sprint(b.N) {
				b.Fatalf("run %s: %s %s %+v", res.Run, res.Status, res.Result, res.Error)
			}
			after, err := cli.Get(ctx, "/bench/none")
			if err != nil {
				b.Fatal(err)
			}
			perCall := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			txns := float64(after.Header.Revision-before.Header.Revision) / float64(b.N)
			b.ReportMetric(perCall, "ns/call")
			b.ReportMetric(txns, "txns/call")
			b.ReportMetric(putNs, "put-ns")
			b.ReportMetric(txnNs, "txn-ns")
			b.ReportMetric(perCall/(txns*txnNs), "x-txns")
		})
	}
}

// etcdLatency is the mean time of n sequential puts, and of n transactions shaped as a
// commit's (a compare on a key's create revision, four puts of a few hundred bytes).
func etcdLatency(b *testing.B, cli *etcdrpc.Client, n int) (putNs, txnNs float64) {
	ctx := context.Background()
	value := strings.Repeat("x", 300)
	start := time.Now()
	for i := range n {
		if _, err := cli.Put(ctx, fmt.Sprintf("/latency/put/%d", i), value); err != nil {
			b.Fatal(err)
		}
	}
	putNs = float64(time.Since(start).Nanoseconds()) / float64(n)
	start = time.Now()
	for i := range n {
		_, err := cli.Txn(ctx).If(etcdrpc.Compare(etcdrpc.CreateRevision("/latency/owner"), "=", 0)).
			Then(etcdrpc.OpPut(fmt.Sprintf("/latency/txn/%d/a", i), value), etcdrpc.OpPut(fmt.Sprintf("/latency/txn/%d/b", i), value),
				etcdrpc.OpPut(fmt.Sprintf("/latency/txn/%d/c", i), value), etcdrpc.OpPut("/latency/summary", value)).Commit()
		if err != nil {
			b.Fatal(err)
		}
	}
	txnNs = float64(time.Since(start).Nanoseconds()) / float64(n)
	return putNs, txnNs
}
