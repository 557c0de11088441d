package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
	"github.com/crw-dev/crw/store/local/journalfile/journalfiletest"
)

// crashWorkflow has sequential and concurrent calls, a repair, a continuation, and a loop whose
// path depends on answers; its result depends on nothing but the answers.
const crashWorkflow = `
import { agent } from "crw:agent";
import * as schemas from "crw:lib/schemas";

export default async function main() {
  const plan = await agent.call({ role: "architect", node: "plan", prompt: "plan it", schema: schemas.plan });
  const builds = await Promise.all(plan.output.steps.map((s) =>
    agent.call({ role: "executor", node: s.id, prompt: "build " + s.id, schema: schemas.buildReport })));
  const first = await Promise.race([
    agent.call({ role: "explorer", node: "race-a", prompt: "look a" }),
    agent.call({ role: "explorer", node: "race-b", prompt: "look b" }),
  ]);
  let review = await agent.call({ role: "reviewer", node: "review", prompt: "review", schema: schemas.reviewVerdict });
  let rounds = 1;
  let fix = builds[0];
  while (review.output.verdict !== "approve" && rounds < 3) {
    fix = await agent.call({ role: "executor", node: "s1", resume: fix.handle, prompt: "fix round " + rounds, schema: schemas.buildReport });
    review = await agent.call({ role: "reviewer", node: "review", prompt: "review again " + rounds, schema: schemas.reviewVerdict });
    rounds++;
  }
  return {
    steps: plan.output.steps.map((s) => s.id),
    repaired: plan.meta.repairUsed,
    builds: builds.map((b) => [b.callId, b.status, b.output.summary]),
    first: first.output,
    rounds, verdict: review.output.verdict, fix: fix.callId,
  };
}
`

const crashAnswers = `{"answers": [
  {"match": {"node": "plan"}, "turns": [
    {"text": "Here it is: {\"summary\": \"x\"", "delay_ms": 15},
    {"json": {"summary": "three steps", "risks": [], "steps": [
      {"id": "s1", "title": "one", "description": "d", "files": []},
      {"id": "s2", "title": "two", "description": "d", "files": []},
      {"id": "s3", "title": "three", "description": "d", "files": []}]}, "delay_ms": 10}]},
  {"match": {"node": "s2"}, "turns": [{"json": {"status": "done", "summary": "built s2", "filesChanged": [], "testsRun": [], "notes": null}, "delay_ms": 40}]},
  {"match": {"node": "s3"}, "turns": [{"json": {"status": "done", "summary": "built s3", "filesChanged": [], "testsRun": [], "notes": null}, "delay_ms": 5}]},
  {"match": {"node": "race-a"}, "turns": [{"text": "a wins", "delay_ms": 5}]},
  {"match": {"node": "race-b"}, "turns": [{"text": "b loses", "delay_ms": 60}]},
  {"match": {"node": "review", "call": 7}, "turns": [{"json": {"verdict": "request_changes", "summary": "no", "findings": []}, "delay_ms": 10}]},
  {"match": {"node": "review", "call": 9}, "turns": [{"json": {"verdict": "request_changes", "summary": "still no", "findings": []}, "delay_ms": 10}]},
  {"match": {"node": "review"}, "turns": [{"json": {"verdict": "approve", "summary": "yes", "findings": []}, "delay_ms": 10}]},
  {"match": {"node": "s1"}, "turns": [{"json": {"status": "done", "summary": "built s1", "filesChanged": [], "testsRun": [], "notes": null}, "delay_ms": 20}]}
]}`

type crashEnv struct {
	t       *testing.T
	dir     string // the workflow and its answers
	state   string
	wf      string
	answers string
}

func newCrashEnv(t *testing.T) *crashEnv {
	dir := t.TempDir()
	e := &crashEnv{t: t, dir: dir, wf: filepath.Join(dir, "wf.js"), answers: filepath.Join(dir, "answers.json")}
	require.NoError(t, os.WriteFile(e.wf, []byte(crashWorkflow), 0o600))
	require.NoError(t, os.WriteFile(e.answers, []byte(crashAnswers), 0o600))
	return e
}

// crw runs the crw command (the test binary under the name crw) and returns its stdout and
// whether it was killed.
func (e *crashEnv) crw(env []string, args ...string) (stdout []byte, killed bool, err error) {
	cmd := exec.Command("crw", args...)
	// A race-built crw sleeps a second at exit unless told not to.
	cmd.Env = append(append(os.Environ(), "CRW_STATE="+e.state, "GORACE=atexit_sleep_ms=0"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return out.Bytes(), true, nil
		}
		return out.Bytes(), false, fmt.Errorf("crw %v: %v\nstdout: %s\nstderr: %s", args, err, out.String(), errOut.String())
	}
	return out.Bytes(), false, err
}

func (e *crashEnv) onlyRun() string {
	entries, err := os.ReadDir(filepath.Join(e.state, "flow"))
	require.NoError(e.t, err)
	require.Len(e.t, entries, 1)
	return entries[0].Name()
}

type runJSON struct {
	Run    string          `json:"run"`
	Status string          `json:"status"`
	Result json.RawMessage `json:"result"`
	Error  any             `json:"error"`
}

func decodeRun(t *testing.T, out []byte) runJSON {
	var r runJSON
	require.NoError(t, json.Unmarshal(out, &r), "%s", out)
	return r
}

// resumeToEnd resumes a run until it ends (a resume may itself be killed by env).
func (e *crashEnv) resumeToEnd(run string, env []string) runJSON {
	for i := 0; i < 5; i++ {
		if st, err := runStatus(e.state, run); err == nil && st.State == "ended" {
			// Killed after its last commit: the journal has its end.
			return runJSON{Run: run, Status: string(st.Status), Result: st.Result}
		}
		out, killed, err := e.crw(env, "flow", "resume", run, "--json")
		require.NoError(e.t, err)
		if !killed {
			return decodeRun(e.t, out)
		}
		env = nil // crash once per resume at most
	}
	e.t.Fatalf("run %s did not end after 5 resumes", run)
	return runJSON{}
}

// checkJournal: the journal opens cleanly, and no turn was sent twice: within an attempt of a
// call each turn k has at most one turn_started row, and a completed call was never sent again.
func (e *crashEnv) checkJournal(run string) []journal.Row {
	path := journalPath(e.state, run)
	journalfiletest.Check(e.t, path)
	rows, err := readRows(e.state, run)
	require.NoError(e.t, err)
	type turn struct {
		call    string
		attempt int
		k       int
	}
	attempts := map[string]int{}
	seen := map[turn]bool{}
	ended := map[string]bool{}
	for _, r := range rows {
		switch {
		case r.Type == journal.TypePrepared:
			attempts[r.Call]++
			delete(ended, r.Call)
		case r.Type == journal.TypeTurnStarted:
			key := turn{r.Call, attempts[r.Call], r.K}
			assert.False(e.t, seen[key], "turn %d of call %s sent twice (row %d)", r.K, r.Call, r.Seq)
			assert.False(e.t, ended[r.Call], "call %s sent a turn after it ended (row %d)", r.Call, r.Seq)
			seen[key] = true
		case journal.IsTerminal(r.Type):
			assert.False(e.t, ended[r.Call], "call %s ended twice (row %d)", r.Call, r.Seq)
			ended[r.Call] = true
		}
	}
	return rows
}

// checkResult compares a resumed run's result with an uninterrupted run's. Everything but the
// Promise.race is decided by the answers alone. The race is not: a crash between the sends of
// its two calls lets the slow one run while no process watches, so after the resume it may
// legitimately finish first. What is guaranteed is that the script saw the race end the way
// the journal recorded it: the winner is the call whose terminal row came first.
func (e *crashEnv) checkResult(want, got json.RawMessage, rows []journal.Row, msg string) {
	e.t.Helper()
	var w, g map[string]any
	require.NoError(e.t, json.Unmarshal(want, &w), msg)
	require.NoError(e.t, json.Unmarshal(got, &g), "%s: %s", msg, got)
	winner := ""
	for _, r := range rows {
		if !journal.IsTerminal(r.Type) || winner != "" {
			continue
		}
		for _, p := range rows {
			if p.Type == journal.TypePrepared && p.Call == r.Call && (p.Node == "race-a" || p.Node == "race-b") {
				winner = p.Node
			}
		}
	}
	wantFirst := map[string]string{"race-a": "a wins", "race-b": "b loses"}[winner]
	require.NotEmpty(e.t, wantFirst, "%s: no race call ended", msg)
	assert.Equal(e.t, wantFirst, g["first"], "%s: the race's winner is the call the journal ended first", msg)
	delete(w, "first")
	delete(g, "first")
	assert.Equal(e.t, w, g, msg)
}

// TestCrashBetweenEveryCommit kills the run's process with SIGKILL right after each of its
// journal commits in turn, resumes it, and checks the result equals an uninterrupted run's.
func TestCrashBetweenEveryCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("kills many processes")
	}
	e := newCrashEnv(t)
	e.state = t.TempDir()
	out, killed, err := e.crw(nil, "flow", "run", e.wf, "--answers", e.answers, "--json")
	require.NoError(t, err)
	require.False(t, killed)
	want := decodeRun(t, out)
	require.Equal(t, string(store.RunCompleted), want.Status, "%s", out)
	e.checkJournal(want.Run)

	crashed := 0
	for n := 1; n < 200; n++ {
		e.state = t.TempDir()
		env := []string{local.CrashAfterCommitEnv + "=" + strconv.Itoa(n)}
		out, killed, err := e.crw(env, "flow", "run", e.wf, "--answers", e.answers, "--json")
		require.NoError(t, err, "commit %d", n)
		if !killed {
			// Past the last commit: the run ended by itself.
			got := decodeRun(t, out)
			e.checkResult(want.Result, got.Result, e.checkJournal(got.Run), "uninterrupted")
			break
		}
		crashed++
		run := e.onlyRun()
		// Every other time the resume is killed too, a few commits in.
		var again []string
		if n%2 == 0 {
			again = []string{local.CrashAfterCommitEnv + "=" + strconv.Itoa(1+n%5)}
		}
		got := e.resumeToEnd(run, again)
		require.Equal(t, string(store.RunCompleted), got.Status, "crash after commit %d", n)
		e.checkResult(want.Result, got.Result, e.checkJournal(run), fmt.Sprintf("crash after commit %d", n))
	}
	assert.Greater(t, crashed, 5, "the workflow should make many commits")
	t.Logf("killed after each of %d commits", crashed)
}

// TestCrashAtRandomInstants kills detached runs at random instants and resumes them.
func TestCrashAtRandomInstants(t *testing.T) {
	if testing.Short() {
		t.Skip("kills many processes")
	}
	e := newCrashEnv(t)
	e.state = t.TempDir()
	out, _, err := e.crw(nil, "flow", "run", e.wf, "--answers", e.answers, "--json")
	require.NoError(t, err)
	want := decodeRun(t, out)

	rng := rand.New(rand.NewPCG(7, 11))
	for i := 0; i < 12; i++ {
		e.state = t.TempDir()
		out, _, err := e.crw(nil, "flow", "start", e.wf, "--answers", e.answers, "--json")
		require.NoError(t, err)
		run := decodeRun(t, out).Run
		st, err := published(e.state, run)
		require.NoError(t, err)
		time.Sleep(time.Duration(rng.IntN(250)) * time.Millisecond)
		_ = syscall.Kill(st.PID, syscall.SIGKILL)
		for local.Held(e.state, run) {
			time.Sleep(5 * time.Millisecond)
		}
		if s, err := published(e.state, run); err == nil && s.State == "ended" {
			continue // it had finished already
		}
		got := e.resumeToEnd(run, nil)
		require.Equal(t, string(store.RunCompleted), got.Status, "instant %d", i)
		e.checkResult(want.Result, got.Result, e.checkJournal(run), fmt.Sprintf("instant %d", i))
	}
}
