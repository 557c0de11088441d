package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crw-dev/crw/internal/etcdtest"
	"github.com/crw-dev/crw/journal"
)

// chaosFlow makes four calls on three levels; its result names each call's answer, which the
// answers file makes the call's own (its node), so a run's result is known before it runs.
const chaosFlow = `import { agent } from "crw:agent";
const V = { type: "object", properties: { v: { type: "string" } }, required: ["v"], additionalProperties: false };
export default async function main({ n }) {
  const a = await agent.call({ role: "explorer", node: "a" + n, prompt: "first", schema: V });
  const [b, c] = await Promise.all([
    agent.call({ role: "explorer", node: "b" + n, prompt: "second " + a.output.v, schema: V }),
    agent.call({ role: "explorer", node: "c" + n, prompt: "third " + a.output.v, schema: V }),
  ]);
  const d = await agent.call({ role: "explorer", node: "d" + n, prompt: b.output.v + c.output.v, schema: V });
  return [a, b, c, d].map((r) => r.status + ":" + (r.output ? r.output.v : ""));
}
`

// chaosHost is a worker's host: its state folder, its proxies to the cluster's members (a
// partition cuts it and its children off), and the worker process it runs now.
type chaosHost struct {
	name    string
	state   string
	proxies []*etcdtest.Proxy
	env     []string

	mu      sync.Mutex
	worker  *exec.Cmd
	exited  chan struct{}
	logs    []*syncLog // every worker this host ran
	stopped []int      // children SIGSTOPped, continued when the test ends
}

var takenPid = regexp.MustCompile(`run (\S+) taken \([a-z_]+\): pid (\d+)`)

// children are the pids of the run processes this host's workers started.
func (h *chaosHost) children() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	var pids []int
	for _, l := range h.logs {
		for _, m := range takenPid.FindAllStringSubmatch(l.String(), -1) {
			pid, _ := strconv.Atoi(m[2])
			pids = append(pids, pid)
		}
	}
	return pids
}

// start starts a worker on the host.
func (h *chaosHost) start(t *testing.T) {
	cmd, exited, log := startWorker(t, h.state, h.env, "--slots", "3")
	h.mu.Lock()
	h.worker, h.exited = cmd, exited
	h.logs = append(h.logs, log)
	h.mu.Unlock()
}

// kill SIGKILLs the host's worker and, when host is true, every run process it started (the
// host died): those still alive die with their leases unreleased.
func (h *chaosHost) kill(host bool) {
	_ = h.worker.Process.Kill()
	<-h.exited
	if host {
		for _, pid := range h.children() {
			if isExec(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// isExec tells whether pid is a live run process of crw's (a pid a finished child had may be
// another process's now).
func isExec(pid int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(cmdline), "_exec")
}

func (h *chaosHost) partition(cut bool) {
	for _, p := range h.proxies {
		if cut {
			p.Partition()
		} else {
			p.Heal()
		}
	}
}

// TestChaosOnEtcd: three etcd members and three workers, each worker's host reaching the
// cluster through a proxy of its own; thirty queued runs of four calls each. While they run,
// faults come at seeded random moments, each logged: a worker SIGKILLed alone or with its run
// processes (its host died), a member or the leader SIGKILLed and started again, a worker's
// host partitioned from the cluster past its lease and healed, a run process SIGSTOPped past its
// lease and continued. Then every run has ended with the result an uninterrupted run has, no
// call ended twice, no turn was sent twice, and (read from etcd's own history of the keys) every
// row was written once, by the holder whose started row it follows, while that holder held
// the run.
func TestChaosOnEtcd(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CRW_CHAOS_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
	}
	t.Logf("CRW_CHAOS_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	const runs, prefix, ttl = 30, "/chaos", 2 * time.Second

	c := etcdtest.Start(t, 3)
	cli := c.AdminClient(t)
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(chaosFlow), 0o644))
	var entries []string
	for n := range runs {
		for _, node := range []string{"a", "b", "c", "d"} {
			entries = append(entries, fmt.Sprintf(`{"match": {"node": "%s%d"}, "turns": [{"json": {"v": "%s%d"}, "delay_ms": %d}]}`,
				node, n, strings.ToUpper(node), n, 300+rng.IntN(1500)))
		}
	}
	answers := filepath.Join(dir, "answers.json")
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [`+strings.Join(entries, ",\n")+`]}`), 0o644))
	sent := filepath.Join(dir, "sent.jsonl")

	direct := "etcd://" + strings.Join(memberAddrs(c), ",") + prefix + "?ttl=2s"
	queueEnv := []string{"CRW_STORE=" + direct}
	ids := make([]string, runs)
	for n := range runs {
		ids[n] = queueWith(t, filepath.Join(dir, "queue"), queueEnv, wf, answers, fmt.Sprintf(`{"n": %d}`, n))
	}

	hosts := make([]*chaosHost, 3)
	for i := range hosts {
		h := &chaosHost{name: fmt.Sprintf("host%d", i), state: filepath.Join(dir, fmt.Sprintf("host%d", i))}
		var addrs []string
		for _, m := range c.Members {
			p := etcdtest.NewProxy(t, strings.TrimPrefix(m.ClientURL, "http://"))
			h.proxies = append(h.proxies, p)
			addrs = append(addrs, p.Addr)
		}
		h.env = []string{"CRW_STORE=etcd://" + strings.Join(addrs, ",") + prefix + "?ttl=2s", "CRW_FAKE_HOST_LOG=" + sent}
		h.start(t)
		hosts[i] = h
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, h := range hosts {
				for i, l := range h.logs {
					t.Logf("%s's worker %d:\n%s", h.name, i, l.String())
				}
			}
			for id, r := range listRuns(t, filepath.Join(dir, "queue"), queueEnv) {
				if r.State != "ended" {
					res := durableCrw(t, filepath.Join(dir, "queue"), queueEnv, "flow", "status", id, "--json")
					t.Logf("not ended: %s", res.stdout)
				}
			}
		}
		for _, h := range hosts {
			h.partition(false)
			for _, pid := range h.stopped {
				_ = syscall.Kill(pid, syscall.SIGCONT)
			}
			for _, pid := range h.children() {
				if isExec(pid) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	})

	ended := func() bool {
		for _, r := range listRuns(t, filepath.Join(dir, "queue"), queueEnv) {
			if r.State != "ended" {
				return false
			}
		}
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pause := func(lo, hi time.Duration) { time.Sleep(lo + time.Duration(rng.Int64N(int64(hi-lo)))) }
	for fault := 0; fault < 12 && !ended(); fault++ {
		pause(300*time.Millisecond, 1500*time.Millisecond)
		h := hosts[rng.IntN(len(hosts))]
		switch kind := rng.IntN(5); kind {
		case 0, 1:
			host := kind == 1
			t.Logf("fault %d: %s's worker SIGKILLed (its run processes too: %v), a new one started", fault, h.name, host)
			h.kill(host)
			h.start(t)
		case 2:
			m := c.Members[rng.IntN(len(c.Members))]
			if rng.IntN(2) == 0 {
				leader, err := c.WaitLeader(ctx, cli, nil)
				require.NoError(t, err)
				m = leader
			}
			t.Logf("fault %d: member %s SIGKILLed", fault, m.Name)
			m.Kill()
			pause(time.Second, 3*time.Second)
			require.NoError(t, c.Restart(ctx, m), "member %s started again", m.Name)
			t.Logf("fault %d: member %s serves again", fault, m.Name)
		case 3:
			t.Logf("fault %d: %s partitioned", fault, h.name)
			h.partition(true)
			pause(ttl+time.Second, ttl+3*time.Second)
			h.partition(false)
			t.Logf("fault %d: %s healed", fault, h.name)
		case 4:
			var running []listed
			for _, r := range listRuns(t, filepath.Join(dir, "queue"), queueEnv) {
				if r.State == "running" && r.PID != 0 && isExec(r.PID) {
					running = append(running, r)
				}
			}
			if len(running) == 0 {
				continue
			}
			r := running[rng.IntN(len(running))]
			// The process may end between the listing and the signal: the
			// run ended, or its worker was killed with it. No fault is injected then.
			if err := syscall.Kill(r.PID, syscall.SIGSTOP); errors.Is(err, syscall.ESRCH) {
				t.Logf("fault %d: run %s's process %d exited before it could be stopped", fault, r.Run, r.PID)
				continue
			} else {
				require.NoError(t, err)
			}
			t.Logf("fault %d: run %s's process %d SIGSTOPped", fault, r.Run, r.PID)
			h.stopped = append(h.stopped, r.PID)
			pause(ttl+time.Second, ttl+3*time.Second)
			if err := syscall.Kill(r.PID, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
				require.NoError(t, err)
			}
			t.Logf("fault %d: run %s's process %d continued", fault, r.Run, r.PID)
		}
	}
	t.Logf("faults done")
	untilRuns(t, filepath.Join(dir, "queue"), queueEnv, nil, "every run ended", func(rs map[string]listed) bool {
		for _, id := range ids {
			if rs[id].State != "ended" {
				return false
			}
		}
		return true
	})

	for n, id := range ids {
		res := durableCrw(t, filepath.Join(dir, "queue"), queueEnv, "flow", "status", id, "--json")
		require.Equal(t, 0, res.exit, res.stderr)
		var st struct {
			Status string
			Result []string
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &st), res.stdout)
		assert.Equal(t, "completed", st.Status, "run %s", id)
		assert.Equal(t, []string{fmt.Sprintf("completed:A%d", n), fmt.Sprintf("completed:B%d", n), fmt.Sprintf("completed:C%d", n),
			fmt.Sprintf("completed:D%d", n)}, st.Result, "run %s: the result of an uninterrupted run", id)
	}

	// No turn was sent twice: the fake host's line of each turn it received.
	turns := map[string]int{}
	f, err := os.Open(sent)
	require.NoError(t, err)
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var line struct{ Turn, Run string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
		turns[line.Run+" "+line.Turn]++
	}
	// A run process killed between a turn's intent and its sending leaves a turn the fake host
	// never received, which the resume answers as the fake answers every turn: so at most one
	// line a turn, not exactly one.
	assert.LessOrEqual(t, len(turns), 4*runs)
	for turn, n := range turns {
		assert.Equal(t, 1, n, "turn %s sent %d times", turn, n)
	}

	checkHistory(ctx, t, cli, prefix, ids)
}

// memberAddrs are the members' HOST:PORT.
func memberAddrs(c *etcdtest.Cluster) []string {
	var addrs []string
	for _, m := range c.Members {
		addrs = append(addrs, strings.TrimPrefix(m.ClientURL, "http://"))
	}
	return addrs
}

// checkHistory reads etcd's history of every key under prefix, revision by revision, and
// checks each run's rows against its holders: each row key put once, while an owner key
// existed, by the holder whose started row it follows (the owner key's value is the holder's
// token, which its started row names); no call ended twice.
func checkHistory(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix string, ids []string) {
	t.Helper()
	// The history ends at a key of the test's own, put now: its event is the watch's last.
	end := prefix + "/runs/~end"
	now, err := cli.Put(ctx, end, "")
	require.NoError(t, err)
	last := now.Header.Revision
	type put struct {
		owner string // the holder's token when the row was put ("" none)
		row   journal.Row
	}
	owners := map[string]string{}       // run -> token of its holder now
	rows := map[string]map[uint64]put{} // run -> seq -> the row's put
	puts := map[string]int{}            // row key -> its puts
	watch := cli.Watch(ctx, prefix+"/runs/", clientv3.WithPrefix(), clientv3.WithRev(1))
	for rev := int64(0); rev < last; {
		resp, ok := <-watch
		require.True(t, ok, "the history watch ended at revision %d of %d", rev, last)
		require.False(t, resp.CompactRevision > 0, "the history was compacted at %d", resp.CompactRevision)
		require.NoError(t, resp.Err())
		for _, ev := range resp.Events {
			rev = ev.Kv.ModRevision
			run, rest, _ := strings.Cut(strings.TrimPrefix(string(ev.Kv.Key), prefix+"/runs/"), "/")
			switch {
			case rest == "owner" && ev.Type == clientv3.EventTypePut:
				owners[run] = string(ev.Kv.Value)
			case rest == "owner":
				owners[run] = ""
			case strings.HasPrefix(rest, "rows/") && ev.Type == clientv3.EventTypePut:
				key := string(ev.Kv.Key)
				puts[key]++
				var row journal.Row
				require.NoError(t, json.Unmarshal(ev.Kv.Value, &row), "%s: %s", key, ev.Kv.Value)
				if rows[run] == nil {
					rows[run] = map[uint64]put{}
				}
				rows[run][row.Seq] = put{owner: owners[run], row: row}
			}
		}
	}
	for key, n := range puts {
		assert.Equal(t, 1, n, "%s put %d times", key, n)
	}
	for _, id := range ids {
		writer := ""
		ends := map[string]int{}
		for seq := uint64(1); seq <= uint64(len(rows[id])); seq++ {
			p, ok := rows[id][seq]
			require.True(t, ok, "run %s: row %d of %d is missing", id, seq, len(rows[id]))
			if p.row.Type == journal.TypeStarted {
				writer = p.row.Process
			}
			assert.NotEmpty(t, p.owner, "run %s: row %d (%s) put while no process held the run", id, seq, p.row.Type)
			assert.Equal(t, writer, p.owner, "run %s: row %d (%s) put by a holder other than the one whose started row it follows", id, seq, p.row.Type)
			switch p.row.Type {
			case journal.TypeCompleted, journal.TypeNullModel, journal.TypeHeld, journal.TypeRefused, journal.TypeOutcomeUnknown, journal.TypeSuperseded:
				ends[p.row.Call]++
			}
		}
		assert.Len(t, ends, 4, "run %s: its four calls ended", id)
		for call, n := range ends {
			assert.Equal(t, 1, n, "run %s: call %s ended %d times", id, call, n)
		}
	}
}
