package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/internal/etcdtest"
	"github.com/crw-dev/crw/store/etcd/etcdrpc"
	"github.com/crw-dev/crw/store/local"
	"github.com/crw-dev/crw/store/local/journalfile/rowlog"
)

// listed is a run as crw flow list --json tells it.
type listed struct {
	Run      string         `json:"run"`
	State    string         `json:"state"`
	Status   string         `json:"status"`
	Calls    map[string]int `json:"calls"`
	InFlight int            `json:"in_flight"`
	PID      int            `json:"pid"`
}

// listRuns is crw flow list --json --limit 0 on state (and the store env names).
func listRuns(t *testing.T, state string, env []string) map[string]listed {
	t.Helper()
	res := durableCrw(t, state, env, "flow", "list", "--json", "--limit", "0")
	require.Equal(t, 0, res.exit, res.stderr)
	var out struct{ Runs []listed }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out), res.stdout)
	runs := map[string]listed{}
	for _, r := range out.Runs {
		runs[r.Run] = r
	}
	return runs
}

// untilRuns lists the runs until done says they are as the test waits for them to be: a
// state, not a time. A process the test watches that exits first fails it; the bound only
// keeps a broken worker from hanging the test.
func untilRuns(t *testing.T, state string, env []string, exited <-chan struct{}, what string, done func(map[string]listed) bool) map[string]listed {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("never %s", what)
		}
		runs := listRuns(t, state, env)
		if done(runs) {
			return runs
		}
		select {
		case <-exited:
			t.Fatalf("the worker exited before %s: %v", what, runs)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// syncLog is a process's output, read while the process writes it.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startWorker starts crw worker on state (and the store env names); its stderr is in log.
func startWorker(t *testing.T, state string, env []string, args ...string) (cmd *exec.Cmd, exited chan struct{}, log *syncLog) {
	t.Helper()
	cmd = exec.Command("crw", append([]string{"worker"}, args...)...)
	cmd.Dir = filepath.Dir(state)
	cmd.Env = append(append(os.Environ(), "CRW_STATE="+state, "GORACE=atexit_sleep_ms=0"), env...)
	log = &syncLog{}
	cmd.Stderr = log
	require.NoError(t, cmd.Start())
	exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	return cmd, exited, log
}

const workerFlow = `import { agent } from "crw:agent";
export default async function main({ node }) {
  return (await agent.call({ role: "explorer", node, prompt: "look" })).status;
}
`

// workerFlowFiles writes workerFlow and its answers in a folder of the test's own, beside the
// state folder it names: a call of the node "slow" is answered after 10 minutes, any other at
// once.
func workerFlowFiles(t *testing.T) (state, wf, answers string) {
	t.Helper()
	dir := t.TempDir()
	state = filepath.Join(dir, "state")
	wf = filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(workerFlow), 0o644))
	answers = filepath.Join(dir, "answers.json")
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [{"match": {"node": "slow"}, "turns": [{"text": "late", "delay_ms": 600000}]}]}`), 0o644))
	return state, wf, answers
}

// TestAWorkerTakesQueuedRunsAndHandsThemBackOnSIGTERM: runs queued with crw flow start --queue
// are taken by crw worker, two at a time, each once, and end completed; SIGTERM stops the
// worker once its child of a run still in flight has stopped, and the next worker takes that
// run and ends it.
func TestAWorkerTakesQueuedRunsAndHandsThemBackOnSIGTERM(t *testing.T) {
	t.Parallel()
	state, wf, answers := workerFlowFiles(t)
	var fast []string
	for range 3 {
		fast = append(fast, queueWith(t, state, nil, wf, answers, `{"node": "quick"}`))
	}
	slow := queueWith(t, state, nil, wf, answers, `{"node": "slow"}`)

	w, exited, log := startWorker(t, state, nil, "--slots", "2")
	untilRuns(t, state, nil, exited, "the quick runs ended and the slow one was in flight", func(runs map[string]listed) bool {
		for _, id := range fast {
			if runs[id].State != "ended" {
				return false
			}
		}
		return runs[slow].State == "running" && runs[slow].InFlight == 1
	})
	require.NoError(t, w.Process.Signal(syscall.SIGTERM))
	select {
	case <-exited:
	case <-time.After(2 * time.Minute): // only a broken worker takes this long
		t.Fatalf("the worker did not exit on SIGTERM: %s", log.String())
	}
	assert.Equal(t, 0, w.ProcessState.ExitCode(), log.String())
	for _, id := range append(fast, slow) {
		assert.Equal(t, 1, strings.Count(log.String(), "run "+id+" taken"), "%s taken once: %s", id, log.String())
	}
	assert.Contains(t, log.String(), "run "+slow+": its process")

	runs := listRuns(t, state, nil)
	for _, id := range fast {
		assert.Equal(t, "completed", runs[id].Status)
	}
	assert.Equal(t, "crashed", runs[slow].State, "handed back to resume")

	// The next worker takes it: a run its process was told to stop is no run for a person.
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": []}`), 0o644)) // the call's answer comes at once now
	_, exited2, log2 := startWorker(t, state, nil, "--slots", "2")
	untilRuns(t, state, nil, exited2, "the next worker ended the handed-back run", func(runs map[string]listed) bool { return runs[slow].State == "ended" })
	assert.Equal(t, "completed", listRuns(t, state, nil)[slow].Status)
	assert.Contains(t, log2.String(), "run "+slow+" taken")
	assert.NotContains(t, log2.String(), "run "+fast[0]+" taken", "an ended run is not taken")
}

// queueWith is queue with the run's input.
func queueWith(t *testing.T, state string, env []string, wf, answers, input string) string {
	t.Helper()
	res := durableCrw(t, state, env, "flow", "start", "--queue", wf, "--backend", "fake", "--answers", answers, "--no-repo", "--input", input, "--json")
	require.Equal(t, 0, res.exit, res.stdout+res.stderr)
	var q struct{ Run string }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &q), res.stdout)
	return q.Run
}

// TestAWorkerOnEtcdResumesTheRunOfAWorkerThatDied: two workers on two hosts of one etcd
// cluster. Worker A takes a queued run; while its call is in flight worker A and its child are
// SIGKILLed (their host died); worker B, which saw the run held, takes it once A's lease has
// expired and ends it completed, the call's turn sent once.
func TestAWorkerOnEtcdResumesTheRunOfAWorkerThatDied(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	address := "etcd://" + strings.TrimPrefix(c.Members[0].ClientURL, "http://") + "/workers"
	env := []string{"CRW_STORE=" + address}
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(workerFlow), 0o644))
	answers := filepath.Join(dir, "answers.json")
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [{"match": {"node": "slow"}, "turns": [{"text": "late", "delay_ms": 25000}]}]}`), 0o644))
	hostA, hostB, hostC := filepath.Join(dir, "hostA"), filepath.Join(dir, "hostB"), filepath.Join(dir, "hostC")
	run := queueWith(t, hostC, env, wf, answers, `{"node": "slow"}`)

	a, aExited, aLog := startWorker(t, hostA, env, "--slots", "1")
	held := untilRuns(t, hostC, env, aExited, "worker A's child had the call in flight", func(runs map[string]listed) bool {
		return runs[run].State == "running" && runs[run].InFlight == 1 && runs[run].PID != 0
	})
	_, bExited, bLog := startWorker(t, hostB, env, "--slots", "1")
	owner := cli.Watch(context.Background(), "/workers/runs/"+run+"/owner", etcdrpc.WithFilterPut())
	require.NoError(t, syscall.Kill(held[run].PID, syscall.SIGKILL))
	require.NoError(t, a.Process.Signal(syscall.SIGKILL))
	<-aExited
	<-owner // A's lease expired: its owner key is deleted

	untilRuns(t, hostC, env, bExited, "worker B ended the run", func(runs map[string]listed) bool { return runs[run].State == "ended" })
	st := listRuns(t, hostC, env)[run]
	assert.Equal(t, "completed", st.Status)
	assert.Contains(t, aLog.String(), "run "+run+" taken")
	assert.Contains(t, bLog.String(), "run "+run+" taken")

	res := durableCrw(t, hostC, env, "flow", "trace", run, "--output", filepath.Join(dir, "trace.jsonl"))
	require.Equal(t, 0, res.exit, res.stdout+res.stderr)
	trace, err := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(trace), `"type":"turn_started"`), "the call's turn was sent once")
	assert.Equal(t, 2, strings.Count(string(trace), `"type":"started"`), "worker A's child and worker B's")
}

// TestAWorkerLeavesARunItCannotServe: a worker that offers codex alone does not take a run
// queued in a repository; it leaves a note, which status and inspect show, naming the
// repository; a worker that offers every repository of its host takes the run and ends it.
func TestAWorkerLeavesARunItCannotServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	repo := filepath.Join(dir, "repo")
	require.NoError(t, os.MkdirAll(repo, 0o755))
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "start"}} {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(workerFlow), 0o644))
	res := durableCrw(t, state, nil, "flow", "start", "--queue", wf, "--backend", "fake", "--repo", repo, "--input", `{"node": "n"}`, "--json")
	require.Equal(t, 0, res.exit, res.stdout+res.stderr)
	var q struct{ Run string }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &q), res.stdout)

	w, exited, log := startWorker(t, state, nil, "--offers", "codex")
	var st struct {
		State    string
		Unserved []string
	}
	deadline := time.Now().Add(3 * time.Minute)
	for len(st.Unserved) == 0 {
		require.True(t, time.Now().Before(deadline), "no note on the run: %s", log.String())
		select {
		case <-exited:
			t.Fatalf("the worker exited: %s", log.String())
		case <-time.After(20 * time.Millisecond):
		}
		res := durableCrw(t, state, nil, "flow", "status", q.Run, "--json")
		require.Equal(t, 0, res.exit, res.stderr)
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &st), res.stdout)
	}
	real, err := filepath.EvalSymlinks(repo)
	require.NoError(t, err)
	assert.Equal(t, "queued", st.State, "not taken")
	require.Len(t, st.Unserved, 1)
	assert.Contains(t, st.Unserved[0], "the run works in the repository "+real+", which this worker does not offer (--offers codex)")
	assert.Contains(t, log.String(), "run "+q.Run+": not taken")
	assert.NotContains(t, log.String(), "run "+q.Run+" taken")
	in := durableCrw(t, state, nil, "flow", "inspect", q.Run)
	require.Equal(t, 0, in.exit, in.stderr)
	assert.Contains(t, in.stdout, "the workers that looked could not take it")
	require.NoError(t, w.Process.Signal(syscall.SIGTERM))
	<-exited

	_, exited2, _ := startWorker(t, state, nil, "--offers", "repo:"+real)
	untilRuns(t, state, nil, exited2, "the worker that offers the repository ended the run", func(runs map[string]listed) bool {
		return runs[q.Run].State == "ended"
	})
	assert.Equal(t, "completed", listRuns(t, state, nil)[q.Run].Status)
}

const clonedFlow = `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  await agent.call({ role: "executor", node: "build", prompt: "write a" });
  const one = await crw.commit("build", { message: "a" });
  await crw.decide({ id: "go", question: "Go on?", schema: { type: "object", properties: { go: { type: "boolean" } }, required: ["go"], additionalProperties: false } });
  await agent.call({ role: "executor", node: "build", prompt: "write b" });
  const two = await crw.commit("build", { message: "b" });
  return [one.commit, two.parent, two.ref];
}
`

// TestAWorkerClonesARunsRepositoryFromItsCloneURL: a run queued on an etcd cluster in a
// repository with a clone URL (--repo-url) keeps its head there; host B, which lacks the
// repository, clones it, runs the run up to a decision and moves the node's ref at the URL first;
// host C, after the answer, clones it too, fetches the run's refs and goes on from B's commit.
// The commits are at the URL, each on the one before.
func TestAWorkerClonesARunsRepositoryFromItsCloneURL(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	env := []string{"CRW_STORE=etcd://" + strings.TrimPrefix(c.Members[0].ClientURL, "http://") + "/crw"}
	dir := t.TempDir()
	git := func(dir string, args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return strings.TrimSpace(string(out))
	}
	repo, remote := filepath.Join(dir, "repo"), filepath.Join(dir, "remote.git")
	require.NoError(t, os.MkdirAll(repo, 0o755))
	git(repo, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README"), []byte("start\n"), 0o644))
	git(repo, "add", "README")
	git(repo, "commit", "-q", "-m", "start")
	head := git(repo, "rev-parse", "HEAD")
	git(dir, "init", "-q", "--bare", remote)
	git(repo, "push", "-q", remote, "main")
	wf, answers := filepath.Join(dir, "wf.js"), filepath.Join(dir, "answers.json")
	require.NoError(t, os.WriteFile(wf, []byte(clonedFlow), 0o644))
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [
  {"match": {"prompt": "write a"}, "turns": [{"text": "done", "files": {"a.txt": "a\n"}}]},
  {"match": {"prompt": "write b"}, "turns": [{"text": "done", "files": {"b.txt": "b\n"}}]}]}`), 0o644))

	hostA, hostB, hostC := filepath.Join(dir, "hostA"), filepath.Join(dir, "hostB"), filepath.Join(dir, "hostC")
	res := durableCrw(t, hostA, env, "flow", "start", "--queue", wf, "--backend", "fake", "--answers", answers, "--repo", repo, "--repo-url", remote, "--json")
	require.Equal(t, 0, res.exit, res.stdout+res.stderr)
	var q struct{ Run string }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &q), res.stdout)
	refs := "refs/crw/flow/" + q.Run + "/"
	assert.Equal(t, head, git(remote, "rev-parse", refs+"head"), "the run's head is kept at the URL")
	require.NoError(t, os.Rename(repo, repo+".elsewhere")) // hosts B and C do not have it

	w, exited, log := startWorker(t, hostB, env)
	untilRuns(t, hostB, env, exited, "host B ran the run up to its decision", func(runs map[string]listed) bool { return runs[q.Run].State == "waiting_decision" })
	require.NoError(t, w.Process.Signal(syscall.SIGTERM))
	<-exited
	assert.Contains(t, log.String(), "run "+q.Run+" taken")
	first := git(remote, "rev-parse", refs+"nodes/build")
	assert.Equal(t, "a\n", git(remote, "show", first+":a.txt")+"\n", "the node's commit is at the URL")
	clones, err := filepath.Glob(filepath.Join(hostB, "clones", "*", ".git"))
	require.NoError(t, err)
	assert.Len(t, clones, 1, "host B cloned the repository")

	res = durableCrw(t, hostC, env, "flow", "answer", q.Run, "go", "--value", `{"go": true}`, "--no-resume")
	require.Equal(t, 0, res.exit, res.stdout+res.stderr)
	_, exited2, _ := startWorker(t, hostC, env)
	untilRuns(t, hostC, env, exited2, "host C ended the run", func(runs map[string]listed) bool { return runs[q.Run].State == "ended" })
	res = durableCrw(t, hostC, env, "flow", "status", q.Run, "--json")
	require.Equal(t, 0, res.exit, res.stderr)
	var st struct {
		Status string
		Result json.RawMessage
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &st), res.stdout)
	require.Equal(t, "completed", st.Status, res.stdout)
	second := git(remote, "rev-parse", refs+"nodes/build")
	assert.JSONEq(t, `["`+first+`", "`+first+`", "`+refs+`nodes/build"]`, string(st.Result), "host C's commit is on host B's")
	assert.Equal(t, first, git(remote, "rev-parse", second+"^"))
	assert.Equal(t, "a\n", git(remote, "show", second+":a.txt")+"\n")
	assert.Equal(t, "b\n", git(remote, "show", second+":b.txt")+"\n")
	clones, err = filepath.Glob(filepath.Join(hostC, "clones", "*", ".git"))
	require.NoError(t, err)
	assert.Len(t, clones, 1, "host C cloned the repository")
}

// TestAWorkerTakesARunAfterItsMachineRestarted: a worker's child and the worker are killed
// with a call in flight, and the machine restarts (the run's log played as written in an
// earlier boot): every reader then says the run's journal waits for its recovery, and the next
// worker recovers it, takes the run and ends it, rather than pass over it as unreadable.
func TestAWorkerTakesARunAfterItsMachineRestarted(t *testing.T) {
	t.Parallel()
	state, wf, answers := workerFlowFiles(t)
	slow := queueWith(t, state, nil, wf, answers, `{"node": "slow"}`)
	w, exited, _ := startWorker(t, state, nil, "--slots", "1")
	runs := untilRuns(t, state, nil, exited, "the run was in flight", func(runs map[string]listed) bool {
		return runs[slow].State == "running" && runs[slow].InFlight == 1 && runs[slow].PID > 0
	})
	require.NoError(t, w.Process.Kill())
	<-exited
	require.NoError(t, syscall.Kill(runs[slow].PID, syscall.SIGKILL))
	never := make(chan struct{})
	untilRuns(t, state, nil, never, "the killed run was crashed", func(runs map[string]listed) bool { return runs[slow].State == "crashed" })
	_, err := rowlog.PlayRestart(filepath.Join(state, "flow", slow, local.JournalLog), 0)
	require.NoError(t, err)
	res := durableCrw(t, state, nil, "flow", "status", slow)
	require.NotEqual(t, 0, res.exit)
	require.Contains(t, res.stderr, "journal_unrecovered")

	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": []}`), 0o644)) // the call's answer comes at once now
	_, exited2, log2 := startWorker(t, state, nil, "--slots", "1")
	untilRuns(t, state, nil, exited2, "the next worker ended the run", func(runs map[string]listed) bool { return runs[slow].State == "ended" })
	assert.Equal(t, "completed", listRuns(t, state, nil)[slow].Status)
	assert.Contains(t, log2.String(), "run "+slow+" taken")
}
