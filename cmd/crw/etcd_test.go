package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/mcptest"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/nextview"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/internal/etcdtest"
	"github.com/crw-dev/crw/internal/mockmodel"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/etcd/etcdrpc"
)

// TestARunOnEtcdGoesOnOnAnotherHost: with --store etcd://…, a run lives on the cluster. Host
// A runs it in the foreground and is SIGKILLed while its second call is in flight; host B (a
// state folder of its own, sharing nothing with A but the cluster) sees it running while A's
// lease lasts, then crashed, resumes it once the lease has expired (the first call from the
// journal, the second sent once, answered), and reads the run's result, rows and list.
func TestARunOnEtcdGoesOnOnAnotherHost(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	address := "etcd://" + strings.TrimPrefix(c.Members[0].ClientURL, "http://") + "/crw"
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() {
  const a = await agent.call({ role: "explorer", node: "a", prompt: "first" });
  const b = await agent.call({ role: "explorer", node: "b", prompt: "slow" });
  return [a.status, b.status];
}
`), 0o644))
	answers := filepath.Join(dir, "a.json")
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [{"match": {"node": "b"}, "turns": [{"text": "late", "delay_ms": 25000}]}]}`), 0o644))
	env := []string{"CRW_STORE=" + address}
	hostA, hostB := filepath.Join(dir, "hostA"), filepath.Join(dir, "hostB")

	a := exec.Command("crw", "flow", "run", wf, "--answers", answers, "--no-repo")
	a.Dir = dir
	a.Env = append(os.Environ(), append(env, "CRW_STATE="+hostA, "GORACE=atexit_sleep_ms=0")...)
	var aOut strings.Builder
	a.Stdout, a.Stderr = &aOut, &aOut
	require.NoError(t, a.Start())
	aDone := make(chan struct{})
	go func() { _ = a.Wait(); close(aDone) }()
	t.Cleanup(func() { _ = a.Process.Kill(); <-aDone })

	// Host B waits for the run to have its second call in flight: a state, not a time.
	var run string
	for {
		res := durableCrw(t, hostB, env, "flow", "list", "--json")
		require.Equal(t, 0, res.exit, res.stderr)
		var list struct {
			Runs []struct {
				Run      string         `json:"run"`
				Calls    map[string]int `json:"calls"`
				InFlight int            `json:"in_flight"`
			} `json:"runs"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &list), res.stdout)
		if len(list.Runs) == 1 && list.Runs[0].Calls["completed"] == 1 && list.Runs[0].InFlight == 1 {
			run = list.Runs[0].Run
			break
		}
		select {
		case <-aDone:
			t.Fatalf("host A's process ended before its second call was in flight: %s", aOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	owner := cli.Watch(context.Background(), "/crw/runs/"+run+"/owner", etcdrpc.WithFilterPut())
	require.NoError(t, a.Process.Signal(syscall.SIGKILL))
	<-aDone

	res := durableCrw(t, hostB, env, "flow", "resume", run)
	assert.Equal(t, 1, res.exit, "A's lease lasts: %s", res.stdout+res.stderr)
	assert.Contains(t, res.stderr, "held by another live process")
	<-owner // A's lease expired: its owner key is deleted

	res = durableCrw(t, hostB, env, "flow", "status", run, "--json")
	require.Equal(t, 0, res.exit, res.stderr)
	var st struct{ State string }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &st), res.stdout)
	assert.Equal(t, "crashed", st.State)

	res = durableCrw(t, hostB, env, "--json", "flow", "resume", run)
	require.Equal(t, 0, res.exit, res.stdout+res.stderr)
	var end struct {
		Status string          `json:"status"`
		Result json.RawMessage `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &end), res.stdout)
	assert.Equal(t, "completed", end.Status)
	assert.JSONEq(t, `["completed", "completed"]`, string(end.Result))

	// The journal, read from the cluster: one row of each call's turn, two processes.
	res = durableCrw(t, hostB, env, "flow", "trace", run, "--output", filepath.Join(dir, "trace.jsonl"))
	require.Equal(t, 0, res.exit, res.stdout+res.stderr)
	trace, err := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
	require.NoError(t, err)
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(trace)), "\n") {
		var row struct{ Type, Call string }
		require.NoError(t, json.Unmarshal([]byte(line), &row), line)
		counts[row.Type+" "+row.Call]++
	}
	assert.Equal(t, 2, counts["started "], "host A's process and host B's")
	assert.Equal(t, 1, counts["turn_started c1"])
	assert.Equal(t, 1, counts["turn_started c2"], "the second call's turn was sent once, by host A")
	assert.Equal(t, 1, counts["completed c1"])
	assert.Equal(t, 1, counts["completed c2"])
	assert.Equal(t, 1, counts["ended "])

	// Nothing of the run is in either host's state folder but its folder on the host.
	_, err = os.Stat(filepath.Join(hostA, "flow", run))
	assert.True(t, os.IsNotExist(err), "host A keeps no run folder of the local store")
}

// TestADetachedRunOnEtcd: crw flow start on an etcd store starts the run's process on this
// host (its log in the state folder's etcd/RUN/), and another host follows it to its end; a
// session run, whose owner's binding lives in the state folder, is refused, saying so.
func TestADetachedRunOnEtcd(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	address := "etcd://" + strings.TrimPrefix(c.Members[0].ClientURL, "http://") + "/team/crw"
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() {
  return (await agent.call({ role: "explorer", prompt: "look" })).status;
}
`), 0o644))
	hostA, hostB := filepath.Join(dir, "hostA"), filepath.Join(dir, "hostB")

	res := durableCrw(t, hostA, nil, "--store", address, "flow", "start", wf, "--backend", "fake", "--no-repo", "--json")
	require.Equal(t, 0, res.exit, res.stdout+res.stderr)
	var started struct {
		Run string `json:"run"`
		PID int    `json:"pid"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &started), res.stdout)
	require.NotZero(t, started.PID)

	res = durableCrw(t, hostB, []string{"CRW_STORE=" + address}, "flow", "follow", started.Run)
	require.Equal(t, 0, res.exit, res.stdout+res.stderr)
	assert.Contains(t, res.stderr, "1 completed")
	assert.Equal(t, `"completed"`, strings.TrimSpace(res.stdout))
	_, err := os.Stat(filepath.Join(hostA, "etcd", started.Run, "process.log"))
	assert.NoError(t, err, "the process's log is in its folder on host A")

	// A session run with no owner is refused as in a state folder, creating nothing.
	res = durableCrw(t, hostA, []string{"CODEX_THREAD_ID="}, "--store", address, "flow", "start", wf, "--no-repo")
	assert.Equal(t, 1, res.exit, res.stdout+res.stderr)
	assert.Contains(t, res.stderr, "capability_unavailable (owner_missing)")
	res = durableCrw(t, hostB, []string{"CRW_STORE=" + address}, "flow", "list", "--json")
	require.Equal(t, 0, res.exit, res.stderr)
	var list struct{ Runs []struct{ Run string } }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &list), res.stdout)
	assert.Len(t, list.Runs, 1, "the refused start created no run")
}

// TestASessionRunOnEtcdIsTiedToItsOwnersHost: a session run started on an etcd store from
// host A keeps its steps and its owner's binding in A's state folder, is tied to A (its spec
// names A's id), goes on there to its end, and is refused by host B's next and resume, which
// name host A, while B reads its status from the cluster.
func TestASessionRunOnEtcdIsTiedToItsOwnersHost(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	address := "etcd://" + strings.TrimPrefix(c.Members[0].ClientURL, "http://") + "/team/crw"
	r := newOwnerRig(t, `{"answers": [{"match": {}, "turns": [{"text": "{\"verdict\": \"woken\"}"}]}]}`)
	r.env = append(r.env, "CRW_STORE="+address)
	run, _ := r.start(`
import { agent } from "crw:agent";
export default async function main() { return (await agent.call({ role: "explorer", prompt: "Explore when woken." })).output; }
`, "--wake-after", "1s")
	t.Cleanup(func() { r.crw("flow", "cancel", run) })
	_, err := os.Stat(filepath.Join(r.state, "flow", run))
	assert.True(t, os.IsNotExist(err), "no run folder of the local store")

	// Its step is on host A's bus, in the run's folder there.
	sb := bus.Bus{Dir: filepath.Join(r.state, "etcd", run)}
	require.Eventually(t, func() bool { steps, _, _ := sb.Steps(); return len(steps) == 1 }, 30*time.Second, 50*time.Millisecond)

	hostB := filepath.Join(r.dir, "hostB")
	onB := []string{"CRW_STORE=" + address}
	for _, args := range [][]string{{"flow", "next", run}, {"flow", "resume", run}, {"flow", "resume", "--detach", run}} {
		res := durableCrw(t, hostB, onB, args...)
		assert.Equal(t, 2, res.exit, "%v: %s%s", args, res.stdout, res.stderr)
		assert.Contains(t, res.stderr, "run "+run+" is a session run of the host "+ops.HostID(r.state)+": its steps and its owner's binding are in that host's state folder", args)
		assert.Contains(t, res.stderr, "next: run crw on the host "+ops.HostID(r.state), args)
	}
	res := durableCrw(t, hostB, onB, "--json", "flow", "status", run)
	require.Equal(t, 0, res.exit, res.stderr)
	assert.Contains(t, res.stdout, `"state":"running"`)

	// The owner takes the step it is woken for: the run ends on host A.
	steps, _, _ := sb.Steps()
	st := nextview.Next(run, nextview.StateRunning, "", steps, nil, 4, nil).Steps[0]
	r.mock.Own(r.ownerID, mockmodel.OwnerStep{Tool: st.HostCall.Tool, Args: st.HostCall.Arguments}, mockmodel.OwnerStep{Text: "Spawned it."})
	require.Eventually(t, func() bool {
		res = durableCrw(t, hostB, onB, "--json", "flow", "status", run)
		return strings.Contains(res.stdout, `"state":"ended"`)
	}, time.Minute, 200*time.Millisecond)
	assert.Contains(t, res.stdout, `"status":"completed"`)
	assert.Contains(t, res.stdout, `"result":"{\"verdict\": \"woken\"}"`)
	bound := false
	for _, row := range r.rows(run) {
		if row.Type == journal.TypeThreadStarted {
			bound = true
			assert.Equal(t, "session", row.Via)
			assert.Equal(t, r.ownerID, row.ParentThreadID)
		}
	}
	assert.True(t, bound, "the call ran on a subagent of the owner")
	lines, err := os.ReadFile(filepath.Join(r.state, "flow-bound", r.ownerID+".jsonl"))
	require.NoError(t, err, "the owner's binding is in host A's state folder")
	assert.Contains(t, string(lines), `"kind":"orchestrator","run_id":"`+run+`"`)
	assert.Contains(t, string(lines), `"kind":"orchestrator_closed"`, "the ended run let its owner go")
}

// TestMCPOnEtcd: crw mcp serves the runs of an etcd cluster, from any host. Host A's server
// starts a run that a rate limit pauses, inspects it and resumes it (PauseAndResume, the
// stdio test's scenario, in a repository); host B's server, sharing nothing with A but the
// cluster, reads it ended and its audit, answers A's request keys with A's results instead of
// starting or resuming again, and refuses a session run without an owner, its next action
// naming the tool's argument.
func TestMCPOnEtcd(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	address := "etcd://" + strings.TrimPrefix(c.Members[0].ClientURL, "http://") + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	server := func(name string) *mcptest.Client {
		cmd := mcpCommand(t, filepath.Join(dir, name), "--store", address)
		cmd.Env = append(cmd.Env, "CODEX_THREAD_ID=") // no owner: a session run is refused for want of one
		return mcptest.Connect(t, ctx, name, &mcp.CommandTransport{Command: cmd})
	}
	a, b := server("hostA"), server("hostB")
	repo := enginetest.GitRepo(t, map[string]string{"README.md": "# the project\n"})
	scenario := filepath.Join(dir, "scenario")
	require.NoError(t, os.Mkdir(scenario, 0o755))
	run := a.PauseAndResume(ctx, scenario, repo)

	st := b.Call(ctx, "status", map[string]any{"run": run})
	require.False(t, st.IsError, st.Text)
	assert.Equal(t, "ended", st.Get("status.state"))
	assert.Equal(t, "completed", st.Get("status.status"))
	audit := b.Call(ctx, "audit", map[string]any{"run": run})
	require.False(t, audit.IsError, audit.Text)
	assert.Contains(t, audit.Text, `"resume"`)

	// A's keys, sent to B: A's answers again, nothing done twice.
	again := b.Call(ctx, "resume", map[string]any{"request_key": "resume-scenario", "run": run,
		"answers": filepath.Join(scenario, "through.json")})
	require.False(t, again.IsError, again.Text)
	assert.Equal(t, run, again.Get("run.run"))
	wf := filepath.Join(mcptest.Repo(t), "workflows", "plan-build-review.js")
	restart := b.Call(ctx, "start", map[string]any{"request_key": "start-scenario", "workflow": wf,
		"input": map[string]any{"task": "Add a --verbose flag"}, "backend": "fake", "answers": filepath.Join(scenario, "answers.json"), "repo": repo})
	require.False(t, restart.IsError, restart.Text)
	assert.Equal(t, run, restart.Get("run.run"), "the start was done again")
	res := durableCrw(t, filepath.Join(dir, "hostB"), []string{"CRW_STORE=" + address}, "flow", "list", "--json")
	require.Equal(t, 0, res.exit, res.stderr)
	var list struct{ Runs []struct{ Run string } }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &list), res.stdout)
	assert.Len(t, list.Runs, 1, "one run on the cluster")

	// A session run needs its owner, as in a state folder: the next action names the tool's
	// argument, not a flag.
	session := b.Call(ctx, "start", map[string]any{"request_key": "session-1", "workflow": wf, "no_repo": true})
	assert.Equal(t, "capability_unavailable", session.Code(), session.Text)
	assert.Contains(t, session.Text, `"nextAction":"backend fake (offline), or backend app-server"`)
}
