package appserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/internal/mockmodel"
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
		Env:         map[string]string{"TMPDIR": t.TempDir()},
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
	th, err := h.b.openThread(context.Background(), c, from, h.commit)
	require.NoError(h.t, err)
	return th
}

func (h *harness) send(ctx context.Context, th backend.Thread, c backend.Call, prompt string) string {
	h.t.Helper()
	id, err := h.b.send(ctx, th, c, prompt, h.commit)
	require.NoError(h.t, err)
	require.NotEmpty(h.t, id)
	return id
}

// run runs turn k of a call to its end.
func (h *harness) run(th backend.Thread, c backend.Call, k int, prompt string) backend.Outcome {
	h.t.Helper()
	return plain(h.b.wait(context.Background(), th, h.send(context.Background(), th, c, prompt)))
}

// plain is an outcome without its cause, which is for the log and not compared.
func plain(out backend.Outcome) backend.Outcome {
	out.Cause = nil
	return out
}

// recorder is a backend.Recorder that keeps what a backend reported, in order.
type recorder struct {
	mu      sync.Mutex
	reports []string
	started chan string
}

func newRecorder() *recorder { return &recorder{started: make(chan string, 4)} }

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports = append(r.reports, s)
}

func (r *recorder) Commit() error            { r.add("commit"); return nil }
func (r *recorder) Thread(th backend.Thread) { r.add("thread") }
func (r *recorder) Started(turnID string)    { r.add("started"); r.started <- turnID }
func (r *recorder) Warn(reason, detail string) {
	r.add("warn " + reason)
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reports...)
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
	assert.Equal(t, backend.Outcome{Status: backend.Answered, TurnID: out.TurnID, Text: "Hello from the script.",
		Tokens: journal.Tokens{Input: 100, CachedInput: 40, Output: 20, ReasoningOutput: 5, Total: 120}}, out)
	assert.Equal(t, 2, h.commits, "a commit before the thread and one before the turn")
	var loaded struct{ Data []string }
	require.NoError(t, h.b.current().Client().Call(context.Background(), "thread/loaded/list", map[string]any{}, &loaded))
	assert.Empty(t, loaded.Data, "the thread was unloaded once its turn ended")

	reqs := h.mock.Requests()
	require.Len(t, reqs, 1)
	tmp := h.opts.Env["TMPDIR"]
	prompt := "Say hello.\n\n## Tools\n\n- The run's temporary directory is " + tmp + " (recorded in the run's run.json). Put TMPDIR=" + tmp + " in front of every command you run.\n"
	assert.Equal(t, mockmodel.Request{Thread: th.ID, Turn: out.TurnID, Call: 1, Role: "architect", Node: "plan", K: 1,
		Prompt: prompt, Task: prompt, // the thread's first turn: its task
		Answer: "text", Items: reqs[0].Items, Tools: reqs[0].Tools}, reqs[0], "the turn's text ends with the tools section")
}

// TestTurnTextCarriesTheToolEnvironment: a run with a tool environment sends, on the real app
// server, a turn text that ends with a fact per entry and the prefix every command takes.
func TestTurnTextCarriesTheToolEnvironment(t *testing.T) {
	h := newHarness(t, `{"answers":[{"match":{"role":"executor","node":"n"},"turns":[{"text":"done"}]}]}`)
	tmp := h.opts.Env["TMPDIR"]
	h.b.o.Env = map[string]string{"TMPDIR": tmp, "GOTOOLCHAIN": "local", "PATH": "/opt/go/bin" + backend.PathTail}
	c := h.call("executor", "n", "")
	th := h.open(c, backend.Thread{})
	out := h.run(th, c, 1, "Build it.")
	require.Equal(t, backend.Answered, out.Status)
	reqs := h.mock.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "Build it.\n\n## Tools\n\n- The run's temporary directory is "+tmp+" (recorded in the run's run.json).\n"+
		"- The run's tools are in /opt/go/bin, before the shell's PATH (recorded in the run's run.json).\n"+
		"- GOTOOLCHAIN is local (recorded in the run's run.json).\n\n"+
		"Put this prefix in front of every command you run:\n\n    TMPDIR="+tmp+` PATH=/opt/go/bin:"$PATH" GOTOOLCHAIN=local`+"\n", reqs[0].Prompt)
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

	// A call nobody scripted gets what the fake backend gives it for the text the turn sent:
	// an instance of its schema, and estimated tokens.
	c2 := h.call("executor", "other", answerSchema)
	th2 := h.open(c2, backend.Thread{})
	out := h.run(th2, c2, 1, "Anything.")
	sent := h.mock.Requests()[2].Prompt
	assert.True(t, strings.HasPrefix(sent, "Anything.\n\n## Tools\n\n"), sent)
	want := fake.New(nil, nil).Run(context.Background(), backend.Turn{Call: c2, K: 1, Prompt: sent, Thread: th2,
		Sent: &backend.Sent{TurnID: out.TurnID, At: time.Now().Add(-time.Second)}}, newRecorder())
	assert.Equal(t, want, out)
}

func TestErrorKinds(t *testing.T) {
	// Each kind the mock can make Codex report, and how it ends a call (written out, not taken
	// from the classification table).
	kinds := []struct {
		kind   string
		end    backend.End
		reason string
		pause  bool
	}{
		{"contextWindowExceeded", backend.EndNullModel, "context_window_exceeded", false},
		{"usageLimitExceeded", backend.EndHeld, "host_infra_quota", true},
		{"rateLimitExceeded", backend.EndHeld, "host_infra_rate", true},
		{"responseTooManyFailedAttempts", backend.EndHeld, "host_infra_stream", false},
		{"serverOverloaded", backend.EndHeld, "host_infra_overload", false},
		{"internalServerError", backend.EndHeld, "host_infra_unknown", false},
		{"httpConnectionFailed", backend.EndHeld, "host_infra_connection", false},
		{"modelNotFound", backend.EndHeld, "host_infra_unknown", false},
		{"other", backend.EndHeld, "host_infra_other", false},
	}
	var entries []string
	for i, k := range kinds {
		entries = append(entries, fmt.Sprintf(`{"match":{"call":%d},"turns":[{"error":%q}]}`, i+1, k.kind))
	}
	h := newHarness(t, `{"answers":[`+strings.Join(entries, ",")+`]}`)
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			require.True(t, mockmodel.Provokes(k.kind))
			c := h.call("executor", "", "")
			out := h.run(h.open(c, backend.Thread{}), c, 1, "Fail, please.")
			require.Equal(t, backend.Failed, out.Status, "%+v", out)
			assert.Equal(t, &backend.Failure{End: k.end, Reason: k.reason, Pause: k.pause, Detail: "codexErrorInfo " + k.kind}, out.Failure)
			assert.Empty(t, out.Text)
		})
	}
}

func TestInterruptOnCancel(t *testing.T) {
	h := newHarness(t, `{"answers":[{"match":{"call":1},"turns":[{"text":"too late","delay_ms":60000},{"text":"next turn"}]}]}`)
	c := h.call("executor", "slow", "")
	th := h.open(c, backend.Thread{})
	ctx, cancel := context.WithCancel(context.Background())
	turnID := h.send(ctx, th, c, "Take your time.")
	h.requested(1)
	start := time.Now()
	cancel()
	out := plain(h.b.wait(ctx, th, turnID))
	assert.Equal(t, backend.Outcome{TurnID: turnID, Status: backend.Interrupted}, out)
	assert.Less(t, time.Since(start), 30*time.Second, "interrupted at once, not after the 60 s delay")

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
	sentAt := time.Now()
	turnID := h.send(context.Background(), th, c, "Hang.")
	h.requested(1)

	dead := h.b.current()
	require.NoError(t, syscall.Kill(dead.Pid(), syscall.SIGKILL))
	out := plain(h.b.wait(context.Background(), th, turnID))
	assert.Equal(t, backend.Outcome{TurnID: turnID, Status: backend.Lost}, out, "the answer can never come")

	// A new app server resumes the thread; the host says the killed turn was interrupted.
	out = plain(h.b.reconcile(context.Background(), th, c, "Hang.", turnID, sentAt))
	assert.Equal(t, backend.Outcome{TurnID: turnID, Status: backend.Interrupted}, out)
	assert.NotSame(t, dead, h.b.current(), "the app server was started again")

	// The thread takes the next turn in the new app server.
	out = h.run(th, c, 2, "Try again.")
	assert.Equal(t, "after the restart", out.Text)

	// A sender that died before recording the turn id: the turn is found by its prompt.
	found := plain(h.b.reconcile(context.Background(), th, c, "Try again.", "", sentAt))
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
	require.Equal(t, backend.Failed, failed.Status)
	require.NoError(t, h.b.Close())

	b := New(h.opts) // as a resumed run would: another process, the same CODEX_HOME
	defer b.Close()
	ctx := context.Background()
	reconcile := func(th backend.Thread, c backend.Call, prompt, turnID string) backend.Outcome {
		return plain(b.reconcile(ctx, th, c, prompt, turnID, sentAt))
	}
	assert.Equal(t, done, reconcile(th1, c1, "Keep this.", done.TurnID), "harvested, tokens from the rollout")
	assert.Equal(t, done, reconcile(th1, c1, "Keep this.", ""), "found by its prompt")
	assert.Equal(t, backend.Outcome{TurnID: failed.TurnID, Status: backend.Failed,
		Failure: &backend.Failure{End: backend.EndNullModel, Reason: "context_window_exceeded", Detail: "codexErrorInfo contextWindowExceeded"}},
		reconcile(th2, c2, "Too long.", failed.TurnID))

	assert.Equal(t, backend.Outcome{TurnID: "no-such-turn", Status: backend.Lost}, reconcile(th1, c1, "Keep this.", "no-such-turn"))
	assert.Equal(t, backend.Outcome{Status: backend.Lost}, reconcile(th1, c1, "never sent", ""))
	unknown := backend.Thread{ID: "01a00000-0000-7000-8000-000000000000"}
	assert.Equal(t, backend.Outcome{TurnID: "x", Status: backend.Lost}, reconcile(unknown, c1, "Keep this.", "x"))
	assert.Equal(t, 2, len(h.mock.Requests()), "nothing was sent twice")

	// Through Run, a turn an earlier process sent is reconciled, and a turn found by its prompt
	// is reported started: the journal gets its id.
	rec := newRecorder()
	out := plain(b.Run(ctx, backend.Turn{Call: c1, K: 1, Prompt: "Keep this.", Thread: th1, Sent: &backend.Sent{At: sentAt}}, rec))
	assert.Equal(t, done, out)
	assert.Equal(t, []string{"started"}, rec.list(), "nothing committed, nothing sent")
	assert.Equal(t, done.TurnID, <-rec.started)

	// A continuation of a thread an earlier app server ran.
	c3 := h.call("executor", "c", "")
	rec = newRecorder()
	out = b.Run(ctx, backend.Turn{Call: c3, K: 1, Prompt: "Go on.", From: th1}, rec)
	assert.Equal(t, "ok", out.Text)
	assert.Equal(t, []string{"commit", "thread", "commit", "started"}, rec.list(), "a commit before the thread and one before the turn")
	turnID := <-rec.started
	assert.Equal(t, out.TurnID, turnID)
	reqs := h.mock.Requests()
	assert.NotEqual(t, th1.ID, reqs[len(reqs)-1].Thread, "a continuation runs on a fork")
	assert.Greater(t, reqs[len(reqs)-1].Items, reqs[0].Items, "the fork carries the first call's conversation")
}

func TestReconcileWaitsForARunningTurn(t *testing.T) {
	h := newHarness(t, `{"answers":[{"match":{"call":1},"turns":[{"text":"worth the wait","delay_ms":800,"tokens":{"input":4,"output":2}}]}]}`)
	c := h.call("executor", "", "")
	th := h.open(c, backend.Thread{})
	sentAt := time.Now()
	turnID := h.send(context.Background(), th, c, "Slowly.")
	out := plain(h.b.reconcile(context.Background(), th, c, "Slowly.", turnID, sentAt))
	assert.Equal(t, backend.Outcome{Status: backend.Answered, TurnID: turnID, Text: "worth the wait", Tokens: journal.Tokens{Input: 4, Output: 2, Total: 6}}, out)
	assert.GreaterOrEqual(t, time.Since(sentAt), 800*time.Millisecond)
}

func TestStartFailures(t *testing.T) {
	ctx, commit := context.Background(), func() error { return nil }
	b := New(Options{Codex: filepath.Join(t.TempDir(), "codex")})
	defer b.Close()
	_, err := b.openThread(ctx, backend.Call{}, backend.Thread{}, commit)
	assert.True(t, errors.Is(err, codex.ErrCodexMissing), "%v", err)
	assert.Contains(t, err.Error(), codex.InstallCommand)
	rec := newRecorder()
	out := b.Run(ctx, backend.Turn{Call: backend.Call{ID: "c1"}, K: 1, Prompt: "x"}, rec)
	assert.Equal(t, backend.Unavailable, out.Status, "no codex: nothing was sent")
	assert.Empty(t, rec.list())

	// A binary that is no app server: no request reached one, so nothing is lost.
	b = New(Options{Codex: "false"})
	defer b.Close()
	_, err = b.openThread(ctx, backend.Call{}, backend.Thread{}, commit)
	assert.True(t, errors.Is(err, codex.ErrUnavailable), "%v", err)
	assert.False(t, errors.Is(err, codex.ErrLost), "%v", err)
	assert.Equal(t, backend.Unavailable, b.Run(ctx, backend.Turn{Call: backend.Call{ID: "c1"}, K: 1, Prompt: "x"}, rec).Status)
}

// TestRequestFailures: every way a thread or turn request can fail maps to a typed outcome,
// and an RPC error is classified by the codexErrorInfo its data carries.
func TestRequestFailures(t *testing.T) {
	t.Parallel()
	rpc := func(data string) error {
		return fmt.Errorf("turn/start: %w", &codex.RPCError{Code: -32600, Message: "refused", Data: json.RawMessage(data)})
	}
	tests := []struct {
		name string
		err  error
		want backend.Outcome
	}{
		{"lost", fmt.Errorf("thread/start: %w", codex.ErrLost), backend.Outcome{Status: backend.Lost, Open: true}},
		{"no codex", codex.ErrCodexMissing, backend.Outcome{Status: backend.Unavailable}},
		{"no app server", codex.ErrUnavailable, backend.Outcome{Status: backend.Unavailable}},
		{"closed", errClosed, backend.Outcome{Status: backend.Unavailable}},
		{"cancelled", context.Canceled, backend.Outcome{Status: backend.Interrupted}},
		{"rpc with a kind", rpc(`{"codexErrorInfo":"unauthorized"}`), backend.Outcome{Status: backend.Failed,
			Failure: &backend.Failure{End: backend.EndRefused, Reason: "host_config_unauthorized", Detail: "codexErrorInfo unauthorized"}}},
		{"rpc with an object kind", rpc(`{"codexErrorInfo":{"httpConnectionFailed":{"httpStatusCode":502}}}`), backend.Outcome{Status: backend.Failed,
			Failure: &backend.Failure{End: backend.EndHeld, Reason: "host_infra_connection", Detail: "codexErrorInfo httpConnectionFailed"}}},
		{"rpc with a usage limit", rpc(`{"codexErrorInfo":"usageLimitExceeded"}`), backend.Outcome{Status: backend.Failed,
			Failure: &backend.Failure{End: backend.EndHeld, Reason: "host_infra_quota", Pause: true, Detail: "codexErrorInfo usageLimitExceeded"}}},
		{"rpc without one", rpc(``), backend.Outcome{Status: backend.Failed,
			Failure: &backend.Failure{End: backend.EndHeld, Reason: "host_infra_unknown", Detail: "the host gave no codexErrorInfo"}}},
		{"the commit failed", errors.New("journal: poisoned"), backend.Outcome{Status: backend.Unavailable}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := failure(tt.err)
			assert.Equal(t, tt.err, got.Cause, "the cause is kept")
			assert.Equal(t, tt.want, plain(got))
		})
	}
}

// TestProviderMessageStaysOut: the message a host sends with a failure (an RPC error's, a failed
// turn's) is provider text: the Failure the engine journals and reports names the
// codexErrorInfo alone.
func TestProviderMessageStaysOut(t *testing.T) {
	t.Parallel()
	const secret = "key sk-live-PROVIDER-3d8e rejected"
	want := &backend.Failure{End: backend.EndRefused, Reason: "host_config_bad_request", Detail: "codexErrorInfo badRequest"}
	rpc := fmt.Errorf("turn/start: %w", &codex.RPCError{Code: -32600, Message: secret, Data: json.RawMessage(`{"codexErrorInfo":"badRequest"}`)})
	assert.Equal(t, want, failure(rpc).Failure)
	turn := &codex.Turn{ID: "t1", Status: codex.TurnFailed, Error: &codex.TurnError{Message: secret, CodexErrorInfo: json.RawMessage(`"badRequest"`)}}
	assert.Equal(t, want, outcome(turn, nil, codex.TokenUsage{}).Failure)
}

// TestOutcomeOfAnInterruptedTurnWithAnError: an interrupted turn that carries an error is
// classified by it; one without is an interrupt.
func TestOutcomeOfAnInterruptedTurnWithAnError(t *testing.T) {
	t.Parallel()
	withErr := &codex.Turn{ID: "t1", Status: codex.TurnInterrupted, Error: &codex.TurnError{CodexErrorInfo: json.RawMessage(`"serverOverloaded"`)}}
	assert.Equal(t, backend.Outcome{TurnID: "t1", Status: backend.Failed,
		Failure: &backend.Failure{End: backend.EndHeld, Reason: "host_infra_overload", Detail: "codexErrorInfo serverOverloaded"}},
		outcome(withErr, nil, codex.TokenUsage{}))
	assert.Equal(t, backend.Outcome{TurnID: "t2", Status: backend.Interrupted}, outcome(&codex.Turn{ID: "t2", Status: codex.TurnInterrupted}, nil, codex.TokenUsage{}))
	assert.Equal(t, backend.Outcome{TurnID: "t3", Status: backend.Failed,
		Failure: &backend.Failure{End: backend.EndHeld, Reason: "host_infra_unknown", Detail: "the host gave no codexErrorInfo"}},
		outcome(&codex.Turn{ID: "t3", Status: codex.TurnFailed, Error: &codex.TurnError{Message: "boom"}}, nil, codex.TokenUsage{}))
}

// TestAThreadWhoseBindingCannotBeWrittenGetsNoTurn: the flow binding of a call's thread is
// written before its turn is sent; a binding that cannot be written sends nothing, and the
// call is held host_config_flow_binding.
func TestAThreadWhoseBindingCannotBeWrittenGetsNoTurn(t *testing.T) {
	h := newHarness(t, `{"answers":[{"match":{},"turns":[{"text":"never sent"}]}]}`)
	var bound []string
	h.b.o.Bind = func(thread string) error {
		bound = append(bound, thread)
		return errors.New("the flow-bound folder cannot be trusted")
	}
	c := h.call("architect", "plan", "")
	rec := newRecorder()
	out := h.b.Run(context.Background(), backend.Turn{Call: c, K: 1, Prompt: "Say hello."}, rec)
	require.NotNil(t, out.Failure)
	assert.Equal(t, backend.Failed, out.Status)
	assert.Equal(t, backend.EndHeld, out.Failure.End)
	assert.Equal(t, "host_config_flow_binding", out.Failure.Reason)
	require.Len(t, bound, 1, "the thread was to be bound once")
	assert.Contains(t, out.Failure.Detail, bound[0])
	assert.Empty(t, h.mock.Requests(), "no turn reached the model")
	assert.NotContains(t, rec.list(), "started")
}

// TestARepairOnANewThreadCarriesTheTask: a held call's generation that goes on with its repair
// opens a thread that never had the task: the turn's text gives the task once, the answer
// repaired and the instruction.
func TestARepairOnANewThreadCarriesTheTask(t *testing.T) {
	h := newHarness(t, `{"answers":[{"match":{"role":"critic","node":"n"},"turns":[{"text":"about five"},{"text":"{\"n\":5}"}]}]}`)
	c := h.call("critic", "n", "")
	rec := newRecorder()
	out := h.b.Run(context.Background(), backend.Turn{Call: c, K: 2, Prompt: "Fix it.", Task: "count", PreviousAnswer: "about five", OpensWithRepair: true}, rec)
	require.Equal(t, backend.Answered, out.Status, "%+v", out)
	reqs := h.mock.Requests()
	require.Len(t, reqs, 1)
	tmp := h.opts.Env["TMPDIR"]
	assert.Equal(t, "count\n\n### The answer to repair\n\nabout five\n\n### What to do\n\nFix it.\n\n## Tools\n\n- The run's temporary directory is "+tmp+
		" (recorded in the run's run.json). Put TMPDIR="+tmp+" in front of every command you run.\n", reqs[0].Prompt)
}
