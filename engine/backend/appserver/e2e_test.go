package appserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/appserver"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/internal/mockmodel"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local/journalfile/journalfiletest"
)

// These tests run whole workflows through the engine on the real codex app-server, whose model
// is the mock scripted by the same answers files as the fake backend.

type e2e struct {
	t    *testing.T
	svc  *engine.Service
	mock *mockmodel.Server
	repo string // the runs' repository ("": none)
}

// newE2E starts a mock model scripted by answersFile (a path under testdata/answers, or
// inline JSON) and points Codex at it through CODEX_HOME.
func newE2E(t *testing.T, answers string) *e2e {
	codex := mockmodel.Codex(t)
	t.Setenv("CRW_CODEX", codex)
	var a *fake.Answers
	if answers != "" {
		var err error
		a, err = fake.ParseAnswers("answers.json", []byte(answers))
		require.NoError(t, err)
	}
	svc, _ := enginetest.LocalService(t)
	e := &e2e{t: t, svc: svc, mock: mockmodel.New(a)}
	t.Cleanup(e.mock.Close)
	home := t.TempDir()
	require.NoError(t, e.mock.WriteCodexHome(home))
	t.Setenv("CODEX_HOME", home)
	t.Setenv(appserver.CallHeadersEnv, mockmodel.Provider)
	return e
}

func readAnswers(t *testing.T, name string) string {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "answers", name))
	require.NoError(t, err)
	return string(data)
}

func (e *e2e) run(workflow string, input json.RawMessage) (*store.Status, []journal.Row) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := e.svc.Run(ctx, engine.CreateOptions{Workflow: workflow, Input: input, Backend: appserver.Name, Repo: e.repo}, engine.ExecOptions{})
	require.NoError(e.t, err)
	return res, e.rows(res.Run)
}

func (e *e2e) rows(run string) []journal.Row {
	e.t.Helper()
	journalfiletest.Check(e.t, enginetest.JournalPath(e.svc, run))
	rows, err := e.svc.Rows(context.Background(), run)
	require.NoError(e.t, err)
	return rows
}

func writeWorkflow(t *testing.T, src string) string {
	path := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	return path
}

// The shipped workflows give through the real app server what they give on the fake backend.
func TestShippedWorkflowsOnAppServer(t *testing.T) {
	for _, tc := range []struct{ workflow, answers string }{
		{"plan-build-review.js", "plan-build-review.json"},
		{"triage.ts", "triage.json"},
	} {
		t.Run(tc.workflow, func(t *testing.T) {
			wf := filepath.Join("..", "..", "..", "workflows", tc.workflow)
			svc, _ := enginetest.LocalService(t)
			// The executors work in worktrees of the run's repository.
			repo := enginetest.GitRepo(t, map[string]string{"README.md": "# the project\n"})
			onFake, err := svc.Run(context.Background(), engine.CreateOptions{
				Workflow: wf, BackendOpts: map[string]string{"answers": filepath.Join("..", "..", "..", "testdata", "answers", tc.answers)}, Repo: repo,
			}, engine.ExecOptions{})
			require.NoError(t, err)

			e := newE2E(t, readAnswers(t, tc.answers))
			e.repo = repo
			res, rows := e.run(wf, nil)
			require.Equal(t, store.RunCompleted, res.Status, "%+v", res.Error)
			assert.JSONEq(t, string(onFake.Result), string(res.Result))
			assert.Equal(t, onFake.Calls, res.Calls)
			// Real threads and turns, and the tokens the mock reported.
			for _, r := range rows {
				switch r.Type {
				case journal.TypeThreadStarted:
					assert.NotEmpty(t, r.ThreadID)
					assert.NotContains(t, r.ThreadID, "fake")
				case journal.TypeCompleted:
					require.NotNil(t, r.Tokens, "call %s", r.Call)
					assert.Positive(t, r.Tokens.Input)
				}
			}
		})
	}
}

const contractWorkflow = `
import { agent } from "crw:agent";
import { decision } from "crw:lib/schemas";
export default async function main() {
  const repaired = await agent.call({ role: "reviewer", node: "repaired", prompt: "decide", schema: decision });
  const failed = await agent.call({ role: "reviewer", node: "failed", prompt: "decide again", schema: decision });
  const window = await agent.call({ role: "explorer", node: "window", prompt: "too long" });
  const next = await agent.call({ role: "critic", node: "next", prompt: "go on", resume: repaired.handle });
  return [repaired.status, repaired.meta.repairUsed, failed.status, failed.reason, window.status, window.reason, next.status, next.output];
}
`

const contractAnswers = `{"answers": [
  {"match": {"node": "repaired"}, "turns": [{"text": "not json"}, {"json": {"decision": true, "reasons": ["ok"], "confidence": "high"}, "tokens": {"input": 50, "output": 9}}]},
  {"match": {"node": "failed"}, "turns": [{"text": "nope"}, {"text": "still nope"}, {"json": {"decision": true, "reasons": [], "confidence": "low"}}]},
  {"match": {"node": "window"}, "turns": [{"error": "contextWindowExceeded"}]},
  {"match": {"node": "next"}, "turns": [{"text": "continued"}]}
]}`

// Repair, null_model after a failed repair, a classified failure and a continuation, through
// the real app server.
func TestContractOnAppServer(t *testing.T) {
	e := newE2E(t, contractAnswers)
	res, rows := e.run(writeWorkflow(t, contractWorkflow), nil)
	require.Equal(t, store.RunCompleted, res.Status, "%+v", res.Error)
	assert.JSONEq(t, `["completed", true, "null_model", "schema_invalid_after_repair", "null_model", "context_window_exceeded", "completed", "continued"]`, string(res.Result))
	turns := map[string]int{}
	var chained *journal.Row
	for i, r := range rows {
		if r.Type == journal.TypeTurnStarted {
			turns[r.Call]++
		}
		if r.Type == journal.TypeThreadStarted && r.ChainedFrom != "" {
			chained = &rows[i]
		}
	}
	assert.Equal(t, 2, turns["c2"], "never a third turn")
	require.NotNil(t, chained, "the continuation's thread names its chain")
	assert.Contains(t, chained.ChainedFrom, ":c1")
}

const pauseWorkflow = `
import { agent } from "crw:agent";
export default async function main() {
  const a = await agent.call({ role: "explorer", node: "a", prompt: "first" });
  const b = await agent.call({ role: "explorer", node: "b", prompt: "second" });
  return [a.status, b.status, b.reason, b.output];
}
`

// A rate limit pauses the run; a resume once the limit has passed finishes it.
func TestRateLimitPausesAndResumeFinishes(t *testing.T) {
	e := newE2E(t, `{"answers": [{"match": {"node": "b"}, "turns": [{"error": "rateLimitExceeded"}]}]}`)
	wf := writeWorkflow(t, pauseWorkflow)
	res, rows := e.run(wf, nil)
	require.Equal(t, store.RunPaused, res.Status)
	assert.JSONEq(t, `["completed", "held", "host_infra_rate", null]`, string(res.Result))
	escalations := 0
	for _, r := range rows {
		if r.Type == journal.TypeEscalation {
			escalations++
			assert.Equal(t, "quota_or_rate", r.Reason)
		}
	}
	assert.Equal(t, 1, escalations)

	// The limit passed: the same run goes on with a model that answers.
	newE2E(t, `{"answers": [{"match": {}, "turns": [{"text": "answered"}]}]}`)
	res, err := e.svc.Execute(context.Background(), res.Run, engine.ExecOptions{})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, res.Status, "%+v", res.Error)
	assert.JSONEq(t, `["completed", "completed", null, "answered"]`, string(res.Result))
}

// A cancel interrupts a slow turn: interrupt_requested first, the call held cancelled.
func TestCancelInterruptsASlowTurn(t *testing.T) {
	e := newE2E(t, `{"answers": [{"match": {}, "turns": [{"text": "late", "delay_ms": 60000}]}]}`)
	wf := writeWorkflow(t, pauseWorkflow)
	ctx := context.Background()
	id, err := e.svc.Create(ctx, engine.CreateOptions{Workflow: wf, Backend: appserver.Name})
	require.NoError(t, err)
	go func() {
		// Cancel once the turn is under way on the host.
		for len(e.mock.Requests()) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
		assert.NoError(t, e.svc.Store.RequestCancel(ctx, id))
	}()
	res, err := e.svc.Execute(ctx, id, engine.ExecOptions{})
	require.NoError(t, err)
	assert.Equal(t, store.RunCancelled, res.Status)
	var types []string
	for _, r := range e.rows(id) {
		if r.Call == "c1" {
			types = append(types, r.Type)
			if journal.IsTerminal(r.Type) {
				assert.Equal(t, "cancelled", r.Reason)
			}
		}
	}
	assert.Equal(t, []string{"prepared", "thread_started", "turn_started", "interrupt_requested", "held"}, types)
}

// appServers lists the app-server processes this test process started.
func appServers(t *testing.T) []int {
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after its closing paren.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) && strings.Contains(string(cmdline), "app-server") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// The app server killed in the middle of a turn: the run's process asks the host again (a new
// app server) instead of sending the turn twice, and the run goes on.
func TestAppServerKilledMidTurn(t *testing.T) {
	e := newE2E(t, `{"answers": [{"match": {"node": "b"}, "turns": [{"text": "slow", "delay_ms": 30000}]}, {"match": {}, "turns": [{"text": "quick"}]}]}`)
	wf := writeWorkflow(t, `
import { agent } from "crw:agent";
export default async function main() {
  const a = await agent.call({ role: "explorer", node: "a", prompt: "first" });
  const b = await agent.call({ role: "explorer", node: "b", prompt: "second" });
  const c = await agent.call({ role: "explorer", node: "c", prompt: "third" });
  return [a.output, b.status, b.reason, c.output];
}
`)
	go func() {
		for {
			for _, req := range e.mock.Requests() {
				if req.Node == "b" {
					for _, pid := range appServers(t) {
						_ = syscall.Kill(-pid, syscall.SIGKILL) // its process group: the npm launcher and codex
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
					return
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	res, rows := e.run(wf, nil)
	require.Equal(t, store.RunCompleted, res.Status, "%+v", res.Error)
	assert.JSONEq(t, `["quick", "held", "host_interrupted_external", "quick"]`, string(res.Result))
	sent := 0
	for _, req := range e.mock.Requests() {
		if req.Node == "b" {
			sent++
		}
	}
	assert.Equal(t, 1, sent, "the turn was not sent again")
	turns := 0
	for _, r := range rows {
		if r.Type == journal.TypeTurnStarted && r.Call == "c2" {
			turns++
		}
	}
	assert.Equal(t, 1, turns)
}

// Every failure the mock can provoke reaches the script classified by its codexErrorInfo, as
// the call-result table says; usage and rate limits also pause the run.
func TestErrorKindsOnAppServer(t *testing.T) {
	kinds := []struct {
		kind, status, reason string
		pause                bool
	}{
		{"contextWindowExceeded", "null_model", "context_window_exceeded", false},
		{"usageLimitExceeded", "held", "host_infra_quota", true},
		{"rateLimitExceeded", "held", "host_infra_rate", true},
		{"responseTooManyFailedAttempts", "held", "host_infra_stream", false},
		{"serverOverloaded", "held", "host_infra_overload", false},
		{"internalServerError", "held", "host_infra_unknown", false},
		{"httpConnectionFailed", "held", "host_infra_connection", false},
		{"modelNotFound", "held", "host_infra_unknown", false},
		{"other", "held", "host_infra_other", false},
	}
	wf := writeWorkflow(t, `
import { agent } from "crw:agent";
export default async function main() {
  const r = await agent.call({ role: "explorer", node: "n", prompt: "fail" });
  return [r.status, r.reason];
}
`)
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			require.True(t, mockmodel.Provokes(k.kind))
			e := newE2E(t, `{"answers": [{"match": {}, "turns": [{"error": "`+k.kind+`"}]}]}`)
			res, rows := e.run(wf, nil)
			assert.JSONEq(t, `["`+k.status+`", "`+k.reason+`"]`, string(res.Result))
			if k.pause {
				assert.Equal(t, store.RunPaused, res.Status)
			} else {
				assert.Equal(t, store.RunCompleted, res.Status)
			}
			for _, r := range rows {
				if r.Type == journal.TypeThreadStarted {
					assert.NotEmpty(t, r.Model, "the host's model")
					assert.NotEmpty(t, r.Cwd, "the thread's cwd")
					assert.NotEmpty(t, r.RolloutPath, "the thread's rollout")
				}
			}
		})
	}
}

// A rate limit pauses the run while another turn is under way: that turn is interrupted
// (interrupt_requested first) and its call ends held engine_paused.
func TestPauseInterruptsTurnsInFlight(t *testing.T) {
	e := newE2E(t, `{"answers": [
		{"match": {"node": "limited"}, "turns": [{"error": "rateLimitExceeded", "delay_ms": 300}]},
		{"match": {"node": "slow"}, "turns": [{"text": "late", "delay_ms": 60000}]}]}`)
	wf := writeWorkflow(t, `
import { agent } from "crw:agent";
export default async function main() {
  const [a, b] = await Promise.all([
    agent.call({ role: "explorer", node: "slow", prompt: "take your time" }),
    agent.call({ role: "explorer", node: "limited", prompt: "hit the limit" }),
  ]);
  return [a.status, a.reason, b.status, b.reason];
}
`)
	res, rows := e.run(wf, nil)
	assert.Equal(t, store.RunPaused, res.Status)
	assert.JSONEq(t, `["held", "engine_paused", "held", "host_infra_rate"]`, string(res.Result))
	var slow []string
	for _, r := range rows {
		if r.Call == "c1" {
			slow = append(slow, r.Type)
		}
	}
	assert.Equal(t, []string{"prepared", "thread_started", "turn_started", "interrupt_requested", "held"}, slow)
}

// TestAnExecutorEditsItsWorktreeOnTheRealAppServer: the executor's thread works in its node's
// worktree (the real Codex runs the model's shell command there), the user's checkout is left
// alone, and crw.commit keeps the edit on the node's ref; the reviewer's thread works in a
// checkout that holds the executor's pending work.
func TestAnExecutorEditsItsWorktreeOnTheRealAppServer(t *testing.T) {
	e := newE2E(t, "")
	e.repo = enginetest.GitRepo(t, map[string]string{"README.md": "# the project\n"})
	head := enginetest.Git(t, e.repo, "rev-parse", "HEAD")
	// Codex gives a command yield_time_ms (10 s unless told) to finish before it answers the
	// model that it still runs: on a loaded machine a sandboxed shell can take that long to
	// start, and the turn would end before the file is written. 30 s is Codex's most.
	e.mock.OwnPrompt("write the greeting",
		mockmodel.OwnerStep{Tool: "exec_command", Args: map[string]any{"cmd": "printf 'hello from the executor\\n' > greeting.txt && pwd", "yield_time_ms": 30000}},
		mockmodel.OwnerStep{Text: "wrote greeting.txt"})
	e.mock.OwnPrompt("read the greeting",
		mockmodel.OwnerStep{Tool: "exec_command", Args: map[string]any{"cmd": "cat greeting.txt", "yield_time_ms": 30000}},
		mockmodel.OwnerStep{Text: "read it"})
	res, rows := e.run(writeWorkflow(t, `import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const build = await agent.call({ role: "executor", node: "greet", prompt: "write the greeting" });
  const review = await agent.call({ role: "reviewer", node: "greet", prompt: "read the greeting" });
  const kept = await crw.commit("greet", { message: "a greeting" });
  return { build: build.output, review: review.output, ref: kept.ref, parent: kept.parent };
}
`), nil)
	require.Equal(t, store.RunCompleted, res.Status, "%+v", res.Error)
	var out struct{ Build, Review, Ref, Parent string }
	require.NoError(t, json.Unmarshal(res.Result, &out))
	assert.Equal(t, "wrote greeting.txt", out.Build)
	assert.Equal(t, "read it", out.Review)
	assert.Equal(t, head, out.Parent)
	assert.Equal(t, "hello from the executor", enginetest.Git(t, e.repo, "show", out.Ref+":greeting.txt"))
	_, err := os.Stat(filepath.Join(e.repo, "greeting.txt"))
	assert.True(t, os.IsNotExist(err), "the user's checkout is left alone")

	placed := enginetest.OfType(rows, journal.TypeWorkspacePlaced)
	require.Len(t, placed, 2)
	threads := enginetest.OfType(rows, journal.TypeThreadStarted)
	require.Len(t, threads, 2)
	for i := range threads {
		assert.Equal(t, placed[i].Workspace, threads[i].Cwd, "the host's thread works in the call's directory")
	}
	// The reviewer's command read the executor's file in its own checkout.
	var saw bool
	for _, r := range e.mock.Requests() {
		for _, output := range r.Outputs {
			if strings.Contains(r.Prompt, "read the greeting") && strings.Contains(output, "hello from the executor") {
				saw = true
			}
		}
	}
	assert.True(t, saw, "the reviewer's checkout holds the executor's pending work")
	assert.Equal(t, 1, strings.Count(enginetest.Git(t, e.repo, "worktree", "list", "--porcelain"), "worktree "))
}
