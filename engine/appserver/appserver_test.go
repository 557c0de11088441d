package appserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/appserver/mockmodel"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/fake"
	"github.com/crw-dev/crw/journal"
)

// These tests run the real codex app-server (mockmodel.Codex) against the mock model.

// harness is a Backend on a real app server whose model is a mock scripted by answers.
type harness struct {
	t       testing.TB
	b       *Backend
	mock    *mockmodel.Server
	opts    Options
	calls   int
	commits int
}

func newHarness(t testing.TB, answers string) *harness {
	bin := mockmodel.Codex(t)
	var a *fake.Answers
	if answers != "" {
		var err error
		a, err = fake.ParseAnswers("answers.json", []byte(answers))
		require.NoError(t, err)
	}
	h := &harness{t: t, mock: mockmodel.New(a)}
	t.Cleanup(h.mock.Close)
	home := t.TempDir()
	require.NoError(t, h.mock.WriteCodexHome(home))
	h.opts = Options{
		Codex: bin, CodexHome: home, Log: filepath.Join(home, "app-server.log"), Cwd: t.TempDir(),
		Env:         map[string]string{"TMPDIR": t.TempDir(), "CRW_RUN": "test-run"},
		CallHeaders: mockmodel.Provider, RequestTimeout: 30 * time.Second,
	}
	h.b = New(h.opts)
	t.Cleanup(func() {
		h.b.Close()
		if t.Failed() {
			log, _ := os.ReadFile(h.opts.Log)
			t.Logf("app-server stderr:\n%s", log)
		}
	})
	return h
}

func (h *harness) commit() error { h.commits++; return nil }

func (h *harness) call(role, node, schema string) backend.Call {
	h.calls++
	c := backend.Call{ID: fmt.Sprintf("c%d", h.calls), Index: h.calls, Role: role, Node: node}
	if schema != "" {
		c.Schema = json.RawMessage(schema)
	}
	return c
}

func (h *harness) open(c backend.Call, from backend.Thread) backend.Thread {
	h.t.Helper()
	th, err := h.b.OpenThread(context.Background(), backend.ThreadRequest{Call: c, From: from}, h.commit)
	require.NoError(h.t, err)
	return th
}

func (h *harness) send(ctx context.Context, th backend.Thread, req backend.TurnRequest) string {
	h.t.Helper()
	id, err := h.b.Send(ctx, th, req, h.commit)
	require.NoError(h.t, err)
	require.NotEmpty(h.t, id)
	return id
}

// run runs turn k of a call to its end.
func (h *harness) run(th backend.Thread, c backend.Call, k int, prompt string) backend.Outcome {
	h.t.Helper()
	req := backend.TurnRequest{Call: c, K: k, Prompt: prompt}
	return h.b.Wait(context.Background(), th, req, h.send(context.Background(), th, req))
}

// requested waits until the mock has had n requests.
func (h *harness) requested(n int) []mockmodel.Request {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if rs := h.mock.Requests(); len(rs) >= n {
			return rs
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the mock model had %d requests, want %d", len(h.mock.Requests()), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

const answerSchema = `{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}`

func TestTextTurn(t *testing.T) {
	h := newHarness(t, `{"answers":[{"match":{"role":"architect","node":"plan"},"turns":[
		{"text":"Hello from the script.","tokens":{"input":100,"cached_input":40,"output":20,"reasoning_output":5}}]}]}`)
	c := h.call("architect", "plan", "")
	c.Pair = journal.Pair{Effort: "low"}
	th := h.open(c, backend.Thread{})
	assert.NotEmpty(t, th.ID)
	assert.Equal(t, mockmodel.Model, th.Model, "the host's default model")
	assert.Equal(t, "low", th.Effort)
	assert.Equal(t, h.opts.Cwd, th.Cwd)
	assert.True(t, strings.HasSuffix(th.RolloutPath, th.ID+".jsonl"), th.RolloutPath)

	out := h.run(th, c, 1, "Say hello.")
	assert.Equal(t, backend.Outcome{TurnID: out.TurnID, Text: "Hello from the script.",
		Tokens: journal.Tokens{Input: 100, CachedInput: 40, Output: 20, ReasoningOutput: 5, Total: 120}}, out)
	assert.Equal(t, 2, h.commits, "a commit before the thread and one before the turn")
	var loaded struct{ Data []string }
	require.NoError(t, h.b.current().client.Call(context.Background(), "thread/loaded/list", map[string]any{}, &loaded))
	assert.Empty(t, loaded.Data, "the thread was unloaded once its turn ended")

	reqs := h.mock.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, mockmodel.Request{Thread: th.ID, Turn: out.TurnID, Call: 1, Role: "architect", Node: "plan", K: 1,
		Prompt: "Say hello.", Answer: "text", Items: reqs[0].Items}, reqs[0])
}

func TestSchemaTurnAndRepair(t *testing.T) {
	h := newHarness(t, `{"answers":[{"match":{"call":1},"turns":[{"json":{"wrong":1}},{"json":{"answer":"forty-two"}}]}]}`)
	c := h.call("executor", "build", answerSchema)
	th := h.open(c, backend.Thread{})

	first := h.run(th, c, 1, "Answer in JSON.")
	assert.JSONEq(t, `{"wrong":1}`, first.Text)
	repair := h.run(th, c, 2, "Your answer did not validate; answer again.")
	assert.JSONEq(t, `{"answer":"forty-two"}`, repair.Text)
	assert.NotEqual(t, first.TurnID, repair.TurnID)

	reqs := h.mock.Requests()
	require.Len(t, reqs, 2)
	for k, r := range reqs {
		assert.Equal(t, k+1, r.K)
		assert.Equal(t, th.ID, r.Thread, "the repair runs on the same thread")
		assert.JSONEq(t, answerSchema, string(r.Schema), "the call's schema is the turn's outputSchema")
	}

	// A call nobody scripted gets what the fake backend gives it: an instance of its schema,
	// and estimated tokens.
	c2 := h.call("executor", "other", answerSchema)
	out := h.run(h.open(c2, backend.Thread{}), c2, 1, "Anything.")
	req := backend.TurnRequest{Call: c2, K: 1, Prompt: "Anything."}
	want := fake.New(nil).Wait(context.Background(), backend.Thread{}, req, out.TurnID)
	assert.Equal(t, want, out)
}

func TestErrorKinds(t *testing.T) {
	kinds := []string{"contextWindowExceeded", "usageLimitExceeded", "rateLimitExceeded", "responseTooManyFailedAttempts",
		"serverOverloaded", "internalServerError", "httpConnectionFailed", "modelNotFound", "other"}
	var entries []string
	for i, k := range kinds {
		entries = append(entries, fmt.Sprintf(`{"match":{"call":%d},"turns":[{"error":%q}]}`, i+1, k))
	}
	h := newHarness(t, `{"answers":[`+strings.Join(entries, ",")+`]}`)
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			require.True(t, mockmodel.Provokes(kind))
			c := h.call("executor", "", "")
			out := h.run(h.open(c, backend.Thread{}), c, 1, "Fail, please.")
			assert.True(t, out.Failed, "%+v", out)
			assert.Equal(t, kind, out.ErrorInfo)
			assert.Empty(t, out.Text)
		})
	}
}

func TestInterruptOnCancel(t *testing.T) {
	h := newHarness(t, `{"answers":[{"match":{"call":1},"turns":[{"text":"too late","delay_ms":60000},{"text":"next turn"}]}]}`)
	c := h.call("executor", "slow", "")
	th := h.open(c, backend.Thread{})
	ctx, cancel := context.WithCancel(context.Background())
	req := backend.TurnRequest{Call: c, K: 1, Prompt: "Take your time."}
	turnID := h.send(ctx, th, req)
	h.requested(1)
	start := time.Now()
	cancel()
	out := h.b.Wait(ctx, th, req, turnID)
	assert.Equal(t, backend.Outcome{TurnID: turnID, Interrupted: true}, out)
	assert.Less(t, time.Since(start), 5*time.Second, "interrupted at once, not after the delay")

	// The thread goes on: the next turn runs normally.
	assert.Equal(t, "next turn", h.run(th, c, 2, "Again.").Text)
}

func TestContinuationForks(t *testing.T) {
	h := newHarness(t, `{"answers":[{"match":{"call":1},"turns":[{"text":"first answer"}]},{"match":{"call":2},"turns":[{"text":"second answer"}]}]}`)
	c1 := h.call("architect", "plan", "")
	th1 := h.open(c1, backend.Thread{})
	require.Equal(t, "first answer", h.run(th1, c1, 1, "First.").Text)

	c2 := h.call("architect", "refine", "")
	th2 := h.open(c2, th1)
	assert.NotEqual(t, th1.ID, th2.ID, "a continuation runs on a fork")
	assert.True(t, strings.HasSuffix(th2.RolloutPath, th2.ID+".jsonl"), th2.RolloutPath)
	assert.Equal(t, "second answer", h.run(th2, c2, 1, "Second.").Text)

	reqs := h.mock.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, th2.ID, reqs[1].Thread)
	assert.Equal(t, 2, reqs[1].Call)
	assert.Equal(t, "refine", reqs[1].Node)
	assert.Greater(t, reqs[1].Items, reqs[0].Items, "the fork carries the first call's conversation")
}

func TestKillMidTurnThenReconcile(t *testing.T) {
	h := newHarness(t, `{"answers":[{"match":{"call":1},"turns":[{"lost":true},{"text":"after the restart","tokens":{"input":7,"output":3}}]}]}`)
	c := h.call("executor", "build", "")
	th := h.open(c, backend.Thread{})
	req := backend.TurnRequest{Call: c, K: 1, Prompt: "Hang."}
	sentAt := time.Now()
	turnID := h.send(context.Background(), th, req)
	h.requested(1)

	dead := h.b.current()
	require.NoError(t, syscall.Kill(dead.cmd.Process.Pid, syscall.SIGKILL))
	out := h.b.Wait(context.Background(), th, req, turnID)
	assert.Equal(t, backend.Outcome{TurnID: turnID, Lost: true}, out, "the answer can never come")

	// A new app server resumes the thread; the host says the killed turn was interrupted.
	out = h.b.Reconcile(context.Background(), th, req, turnID, sentAt)
	assert.Equal(t, backend.Outcome{TurnID: turnID, Interrupted: true}, out)
	assert.NotSame(t, dead, h.b.current(), "the app server was started again")

	// The thread takes the next turn in the new app server.
	repair := backend.TurnRequest{Call: c, K: 2, Prompt: "Try again."}
	out = h.run(th, c, 2, repair.Prompt)
	assert.Equal(t, "after the restart", out.Text)

	// A sender that died before recording the turn id: the turn is found by its prompt.
	found := h.b.Reconcile(context.Background(), th, repair, "", sentAt)
	assert.Equal(t, out, found)
}

func TestReconcileInNewProcess(t *testing.T) {
	h := newHarness(t, `{"answers":[{"match":{"call":1},"turns":[{"text":"kept","tokens":{"input":11,"cached_input":2,"output":5,"reasoning_output":1}}]},
		{"match":{"call":2},"turns":[{"error":"contextWindowExceeded"}]}]}`)
	c1, c2 := h.call("executor", "a", ""), h.call("executor", "b", "")
	th1, th2 := h.open(c1, backend.Thread{}), h.open(c2, backend.Thread{})
	sentAt := time.Now()
	done := h.run(th1, c1, 1, "Keep this.")
	failed := h.run(th2, c2, 1, "Too long.")
	require.Equal(t, "kept", done.Text)
	require.True(t, failed.Failed)
	require.NoError(t, h.b.Close())

	b := New(h.opts) // as a resumed run would: another process, the same CODEX_HOME
	defer b.Close()
	ctx := context.Background()
	req1, req2 := backend.TurnRequest{Call: c1, K: 1, Prompt: "Keep this."}, backend.TurnRequest{Call: c2, K: 1, Prompt: "Too long."}
	assert.Equal(t, done, b.Reconcile(ctx, th1, req1, done.TurnID, sentAt), "harvested, tokens from the rollout")
	assert.Equal(t, done, b.Reconcile(ctx, th1, req1, "", sentAt), "found by its prompt")
	assert.Equal(t, backend.Outcome{TurnID: failed.TurnID, Failed: true, ErrorInfo: "contextWindowExceeded"}, b.Reconcile(ctx, th2, req2, failed.TurnID, sentAt))

	assert.Equal(t, backend.Outcome{TurnID: "no-such-turn", Lost: true}, b.Reconcile(ctx, th1, req1, "no-such-turn", sentAt))
	assert.Equal(t, backend.Outcome{Lost: true}, b.Reconcile(ctx, th1, backend.TurnRequest{Call: c1, K: 2, Prompt: "never sent"}, "", sentAt))
	unknown := backend.Thread{ID: "01a00000-0000-7000-8000-000000000000"}
	assert.Equal(t, backend.Outcome{TurnID: "x", Lost: true}, b.Reconcile(ctx, unknown, req1, "x", sentAt))
	assert.Equal(t, 2, len(h.mock.Requests()), "nothing was sent twice")

	// A continuation of a thread an earlier app server ran.
	c3 := h.call("executor", "c", "")
	th3, err := b.OpenThread(ctx, backend.ThreadRequest{Call: c3, From: th1}, h.commit)
	require.NoError(t, err)
	req3 := backend.TurnRequest{Call: c3, K: 1, Prompt: "Go on."}
	turnID, err := b.Send(ctx, th3, req3, h.commit)
	require.NoError(t, err)
	assert.Equal(t, "ok", b.Wait(ctx, th3, req3, turnID).Text)
	reqs := h.mock.Requests()
	assert.Equal(t, th3.ID, reqs[len(reqs)-1].Thread)
	assert.Greater(t, reqs[len(reqs)-1].Items, reqs[0].Items, "the fork carries the first call's conversation")
}

func TestReconcileWaitsForARunningTurn(t *testing.T) {
	h := newHarness(t, `{"answers":[{"match":{"call":1},"turns":[{"text":"worth the wait","delay_ms":800,"tokens":{"input":4,"output":2}}]}]}`)
	c := h.call("executor", "", "")
	th := h.open(c, backend.Thread{})
	req := backend.TurnRequest{Call: c, K: 1, Prompt: "Slowly."}
	sentAt := time.Now()
	turnID := h.send(context.Background(), th, req)
	out := h.b.Reconcile(context.Background(), th, req, turnID, sentAt)
	assert.Equal(t, backend.Outcome{TurnID: turnID, Text: "worth the wait", Tokens: journal.Tokens{Input: 4, Output: 2, Total: 6}}, out)
	assert.GreaterOrEqual(t, time.Since(sentAt), 800*time.Millisecond)
}

func TestStartFailures(t *testing.T) {
	ctx, commit := context.Background(), func() error { return nil }
	b := New(Options{Codex: filepath.Join(t.TempDir(), "codex")})
	defer b.Close()
	_, err := b.OpenThread(ctx, backend.ThreadRequest{}, commit)
	assert.True(t, errors.Is(err, ErrCodexMissing), "%v", err)
	assert.Contains(t, err.Error(), InstallCommand)

	// A binary that is no app server: no request reached one, so nothing is lost.
	b = New(Options{Codex: "false"})
	defer b.Close()
	_, err = b.OpenThread(ctx, backend.ThreadRequest{}, commit)
	assert.True(t, errors.Is(err, ErrUnavailable), "%v", err)
	assert.False(t, errors.Is(err, ErrLost), "%v", err)
}
