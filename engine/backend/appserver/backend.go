// Package appserver is the backend that runs turns on the real Codex App Server: a JSON-RPC
// client of `codex app-server` over stdio, one app server per backend, one thread per call.
// The engine owns validation, the repair turn and terminal rows; this package only opens
// threads, runs turns, and finds them again after a restart.
package appserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/journal"
)

// Name is the backend's name in the journal.
const Name = "app-server"

// The headers that carry a call's identity to the model provider named by
// Options.CallHeaders, so a scripted model can answer by role, node and the call's orders.
const (
	HeaderCall     = "x-crw-call"
	HeaderNodeCall = "x-crw-node-call"
	HeaderRoleCall = "x-crw-role-call"
	HeaderRole     = "x-crw-role"
	HeaderNode     = "x-crw-node"
)

// Options configure a Backend.
type Options struct {
	Codex     string // the codex binary; "" looks for $CRW_CODEX, then codex on PATH
	CodexHome string // the app server's CODEX_HOME; "" keeps the environment's
	Log       string // the app server's stderr is appended to this file; "" discards it
	Cwd       string // the working directory of new threads
	// Env is the run's environment (TMPDIR first), set in the shells of every thread.
	Env map[string]string
	// RunJSON is the run.json that records the run's TMPDIR, named by the tools section every
	// turn's text ends with ("": the section says "the run's run.json").
	RunJSON string
	// Sandbox is the sandbox of every thread: read-only, workspace-write (the default) or
	// danger-full-access. The approval policy is always never: nothing waits for a person.
	Sandbox string
	// CallHeaders names a model provider (an id of model_providers in Codex's config) that is
	// sent each call's identity as the headers HeaderCall, HeaderRole and HeaderNode; for a
	// scripted model in tests. "" sends none.
	CallHeaders string
	// RequestTimeout bounds the wait for the answer to a request (not for a turn's end); a
	// request that passes it is lost. Default one minute.
	RequestTimeout time.Duration
	// OnServerRequest is told of every request of the app server, each already declined and
	// recorded as a warning of the call whose turn runs on its thread. It runs on the
	// goroutine that reads the app server and must not block.
	OnServerRequest func(codex.ServerRequest)
	// Warn records a declined request on a thread no turn of this process runs on.
	Warn func(reason, detail string)
	// Bind writes the flow binding of a thread before a turn is sent on it (the spawn hook's
	// line, so that the thread's own spawns get the run's pairs); a thread whose binding cannot
	// be written gets no turn, and its call is held host_config_flow_binding. nil binds nothing.
	Bind func(threadID string) error
}

// Backend runs turns on one codex app-server process, started when the first call needs it
// and started again when it has died.
type Backend struct {
	o Options

	mu        sync.Mutex
	proc      *process
	closed    bool
	recorders map[string]backend.Recorder // thread id → the recorder of the turn running on it
	onRequest func(codex.ServerRequest)   // Options.OnServerRequest as given
}

var _ backend.Backend = (*Backend)(nil)

// New returns a Backend; no process starts until a call needs one.
func New(o Options) *Backend {
	if o.Sandbox == "" {
		o.Sandbox = "workspace-write"
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = time.Minute
	}
	b := &Backend{recorders: map[string]backend.Recorder{}, onRequest: o.OnServerRequest}
	o.OnServerRequest = b.serverRequest
	b.o = o
	return b
}

// Name implements backend.Backend.
func (b *Backend) Name() string { return Name }

// Close implements backend.Backend: the app server is asked to exit, and killed if it has not
// within five seconds.
func (b *Backend) Close() error {
	b.mu.Lock()
	p := b.proc
	b.proc, b.closed = nil, true
	b.mu.Unlock()
	if p != nil {
		p.Stop(5 * time.Second)
	}
	return nil
}

var errClosed = errors.New("appserver: the backend is closed")

// conn returns the running app server, starting one when there is none or the last has died.
func (b *Backend) conn(ctx context.Context) (*process, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errClosed
	}
	if b.proc != nil && b.proc.Alive() {
		return b.proc, nil
	}
	if b.proc != nil {
		b.proc.Kill() // its pipe ended: make sure nothing of it is left
		b.proc = nil
	}
	p, err := startProcess(ctx, &b.o)
	if err != nil {
		return nil, err
	}
	b.proc = p
	return p, nil
}

// current is the app server turns were last sent to, alive or not; nil when none started.
func (b *Backend) current() *process {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.proc
}

// params are the thread settings of a call: its pair (empty parts left to the host), cwd,
// a sandbox and approval policy that never prompt, the run's environment. The thread is
// unloaded as soon as crw lets go of it (see release).
func (b *Backend) params(c backend.Call, model, effort, cwd string) codex.ThreadParams {
	cfg := append(codex.EnvConfig(backend.ProcessEnv(b.o.Env)), codex.Setting{Key: "thread_unload_delay_secs", Value: 0})
	if effort != "" {
		cfg = append(cfg, codex.Setting{Key: "model_reasoning_effort", Value: effort})
	}
	if p := b.o.CallHeaders; p != "" {
		h := "model_providers." + p + ".http_headers."
		cfg = append(cfg, codex.Setting{Key: h + HeaderCall, Value: strconv.Itoa(c.Index)},
			codex.Setting{Key: h + HeaderNodeCall, Value: strconv.Itoa(c.NodeCall)},
			codex.Setting{Key: h + HeaderRoleCall, Value: strconv.Itoa(c.RoleCall)})
		if c.Role != "" {
			cfg = append(cfg, codex.Setting{Key: h + HeaderRole, Value: c.Role})
		}
		if c.Node != "" {
			cfg = append(cfg, codex.Setting{Key: h + HeaderNode, Value: c.Node})
		}
	}
	return codex.ThreadParams{Model: model, Cwd: cwd, ApprovalPolicy: "never", Sandbox: b.o.Sandbox, Config: cfg}
}

// Run implements backend.Backend. A turn an earlier process sent is reconciled: its thread is
// resumed in this process's app server and the turn looked up, never sent again. Otherwise the
// call's thread is started (or forked, for a continuation) once the intent is durable, and the
// turn is sent and waited for. A turn whose answer is lost (the app server died, a request
// timed out) is asked for once more on a new app server before it is left Lost, and Open: the
// host may still run it, so a later resume's reconcile pass decides it.
func (b *Backend) Run(ctx context.Context, t backend.Turn, rec backend.Recorder) backend.Outcome {
	th := t.Thread
	if t.OpensWithRepair {
		t.Prompt = t.RepairOnItsOwn() // its thread never had the task
	}
	if t.Sent != nil {
		b.watch(th.ID, rec)
		defer b.unwatch(th.ID)
		out := b.reconcile(ctx, th, t.Call, t.Prompt, t.Sent.TurnID, t.Sent.At)
		if out.TurnID != "" && t.Sent.TurnID == "" {
			rec.Started(out.TurnID)
		}
		return lostStaysOpen(out)
	}
	if th.ID == "" {
		var err error
		if th, err = b.openThread(ctx, t.Call, t.From, rec.Commit); err != nil {
			return failure(err)
		}
		rec.Thread(th)
	}
	if b.o.Bind != nil {
		if err := b.o.Bind(th.ID); err != nil {
			return backend.Outcome{Status: backend.Failed, Cause: err, Failure: &backend.Failure{End: backend.EndHeld, Reason: "host_config_flow_binding",
				Detail: "the flow binding of thread " + th.ID + " cannot be written: " + err.Error()}}
		}
	}
	b.watch(th.ID, rec)
	defer b.unwatch(th.ID)
	turnID, err := b.send(ctx, th, t.Call, t.Prompt, rec.Commit)
	if err != nil {
		return failure(err)
	}
	rec.Started(turnID)
	sentAt := time.Now()
	out := b.wait(ctx, th, turnID)
	if out.Status == backend.Lost && ctx.Err() == nil {
		out = b.reconcile(ctx, th, t.Call, t.Prompt, turnID, sentAt)
	}
	return lostStaysOpen(out)
}

// lostStaysOpen leaves a lost turn's intent to the reconcile pass of a later resume.
func lostStaysOpen(out backend.Outcome) backend.Outcome {
	if out.Status == backend.Lost {
		out.Open = true
	}
	return out
}

// Done implements backend.Backend: threads are let go of after every turn (see release).
func (b *Backend) Done(backend.Call, backend.Thread) {}

// failure is the outcome of a thread or turn request that failed: an RPC error is classified
// by its codexErrorInfo, a request with no answer is lost, and an app server that could not
// be had was never sent anything.
func failure(err error) backend.Outcome {
	var rpc *codex.RPCError
	switch {
	case errors.Is(err, codex.ErrLost):
		return backend.Outcome{Status: backend.Lost, Open: true, Cause: err}
	case errors.Is(err, codex.ErrCodexMissing), errors.Is(err, codex.ErrUnavailable), errors.Is(err, errClosed):
		return backend.Outcome{Status: backend.Unavailable, Cause: err}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return backend.Outcome{Status: backend.Interrupted, Cause: err}
	case errors.As(err, &rpc):
		return backend.Outcome{Status: backend.Failed, Failure: codex.Classify(rpc.Info()), Cause: err}
	}
	// The commit before the request failed: nothing was sent.
	return backend.Outcome{Status: backend.Unavailable, Cause: err}
}

// watch routes the app server's requests on a thread to the recorder of the turn running on it.
func (b *Backend) watch(threadID string, rec backend.Recorder) {
	b.mu.Lock()
	b.recorders[threadID] = rec
	b.mu.Unlock()
}

func (b *Backend) unwatch(threadID string) {
	b.mu.Lock()
	delete(b.recorders, threadID)
	b.mu.Unlock()
}

// serverRequest records a request of the app server that crw declined (an approval, an
// elicitation, user input): nothing in a run waits for a person.
func (b *Backend) serverRequest(req codex.ServerRequest) {
	detail := fmt.Sprintf("%s on thread %s answered %s", req.Method, req.ThreadID, req.Answer)
	b.mu.Lock()
	rec := b.recorders[req.ThreadID]
	b.mu.Unlock()
	if rec != nil {
		rec.Warn("server_request_declined", detail)
	} else if b.o.Warn != nil {
		b.o.Warn("server_request_declined", detail)
	}
	if b.onRequest != nil {
		b.onRequest(req)
	}
}

// openThread starts a call's thread (thread/start), or for a continuation forks the resumed
// call's thread at its last turn (thread/fork), once commit has made the intent durable.
func (b *Backend) openThread(ctx context.Context, c backend.Call, from backend.Thread, commit func() error) (backend.Thread, error) {
	p, err := b.conn(ctx)
	if err != nil {
		return backend.Thread{}, err
	}
	cwd := b.o.Cwd
	if c.Workspace != "" {
		cwd = c.Workspace
	}
	params := b.params(c, c.Pair.Model, c.Pair.Effort, cwd)
	if err := commit(); err != nil {
		return backend.Thread{}, err
	}
	var r *codex.ThreadResponse
	if from.ID != "" {
		var last string
		if _, err = p.Client().Turns(ctx, from.ID, func(t *codex.Turn) bool { last = t.ID; return true }); err == nil {
			r, err = p.Client().ForkThread(ctx, from.ID, last, params)
		}
	} else {
		r, err = p.Client().StartThread(ctx, params)
	}
	if err != nil {
		return backend.Thread{}, err
	}
	p.setLoaded(r.Thread.ID, true)
	return backend.Thread{ID: r.Thread.ID, Model: r.Model, Effort: r.ReasoningEffort, Cwd: r.Cwd, RolloutPath: r.Thread.Path}, nil
}

// load returns the app server with th loaded in it: a thread an earlier app server ran is
// resumed with its call's settings.
func (b *Backend) load(ctx context.Context, th backend.Thread, c backend.Call) (*process, error) {
	p, err := b.conn(ctx)
	if err != nil || p.isLoaded(th.ID) {
		return p, err
	}
	cwd := th.Cwd
	if c.Workspace != "" {
		cwd = c.Workspace
	}
	if cwd == "" {
		cwd = b.o.Cwd
	}
	for {
		_, err = p.Client().ResumeThread(ctx, th.ID, b.params(c, th.Model, th.Effort, cwd))
		var rpc *codex.RPCError
		if err == nil || !errors.As(err, &rpc) || !strings.Contains(rpc.Message, "is closing") {
			break
		}
		// Released a moment ago and not yet unloaded: the server asks to retry.
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	p.setLoaded(th.ID, true)
	return p, nil
}

// send runs turn/start with the prompt and the call's schema as the turn's outputSchema, once
// commit has made the intent durable.
func (b *Backend) send(ctx context.Context, th backend.Thread, c backend.Call, prompt string, commit func() error) (string, error) {
	p, err := b.load(ctx, th, c)
	if err != nil {
		return "", err
	}
	if err := commit(); err != nil {
		return "", err
	}
	// Once sent, the turn runs whatever ctx does: its id is needed to interrupt it.
	return p.Client().StartTurn(context.WithoutCancel(ctx), th.ID, b.turnText(prompt), c.Schema)
}

// turnText is a turn's text as sent: the prompt, then the tools section that names the run's
// TMPDIR (the shell's environment policy sets it too, but only the text reaches the model).
// It depends only on what run.json records, so every process of the run sends, and looks for,
// the same text.
func (b *Backend) turnText(prompt string) string {
	if tools := codex.ToolsSection(b.o.Env, b.o.RunJSON); tools != "" {
		return prompt + "\n\n" + tools
	}
	return prompt
}

// wait waits for a turn this app server runs. When ctx ends first the turn is interrupted and
// waited for.
func (b *Backend) wait(ctx context.Context, th backend.Thread, turnID string) backend.Outcome {
	p := b.current()
	if p == nil {
		return backend.Outcome{TurnID: turnID, Status: backend.Lost}
	}
	res, err := b.waitTurn(ctx, p, th.ID, turnID)
	if err != nil {
		return backend.Outcome{TurnID: turnID, Status: backend.Lost, Cause: err}
	}
	b.release(p, th.ID)
	return outcome(&res.Turn, res.Messages, res.Tokens)
}

// release lets go of a thread whose turn has ended; the app server, told to keep no idle
// thread, unloads it at once (in 2 to 5 ms). A loaded thread holds about 2 MB of the app
// server's memory for as long as it runs. A repair turn or a continuation loads it again.
func (b *Backend) release(p *process, threadID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p.Client().Unsubscribe(ctx, threadID)
	p.setLoaded(threadID, false) // unsubscribed, it sends nothing more: resume it before a turn
}

// waitTurn waits for a tracked turn; when ctx ends first it sends turn/interrupt and waits
// until the turn has ended, which an interrupted turn does within milliseconds.
func (b *Backend) waitTurn(ctx context.Context, p *process, threadID, turnID string) (codex.TurnResult, error) {
	res, err := p.Client().WaitTurn(ctx, turnID)
	if err == nil || ctx.Err() == nil {
		return res, err
	}
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.o.RequestTimeout)
	defer cancel()
	// An error here means the turn has just ended on its own; it is waited for all the same.
	p.Client().InterruptTurn(ictx, threadID, turnID)
	if res, err = p.Client().WaitTurn(ictx, turnID); err != nil {
		// The process died or stalled; the turn is no longer running for crw either way.
		return codex.TurnResult{Turn: codex.Turn{ID: turnID, Status: codex.TurnInterrupted}}, nil
	}
	return res, nil
}

// reconcile finds a turn an earlier process (or app server) sent at sentAt: the thread is
// resumed and its turns read. A completed turn is harvested, a failed one classified, a running
// one waited for; a turn or thread the host does not know is Lost. turnID "" (the sender died
// before recording it) finds the newest turn with the prompt that started after sentAt.
func (b *Backend) reconcile(ctx context.Context, th backend.Thread, c backend.Call, prompt, turnID string, sentAt time.Time) backend.Outcome {
	lost := backend.Outcome{TurnID: turnID, Status: backend.Lost}
	p, err := b.load(ctx, th, c)
	if err != nil {
		lost.Cause = err
		return lost
	}
	if turnID != "" && p.Client().Tracks(turnID) {
		// Sent on this connection and not waited for yet: its live account is the whole one,
		// while a listing can lag behind a turn that has just started.
		return b.wait(ctx, th, turnID)
	}
	defer b.release(p, th.ID)
	text := b.turnText(prompt)
	find := func(id string) *codex.Turn {
		var found *codex.Turn
		since := sentAt.Add(-2 * time.Second).Unix()
		_, err := p.Client().Turns(ctx, th.ID, func(t *codex.Turn) bool {
			if id != "" {
				if t.ID == id {
					found = t
				}
				return found != nil
			}
			if t.StartedAt != 0 && t.StartedAt < since {
				return true // older than the send: it is not there
			}
			if len(t.Items) > 0 && t.Items[0].Type == "userMessage" && t.Items[0].UserText() == text {
				found = t
			}
			return found != nil
		})
		if err != nil {
			return nil
		}
		return found
	}
	t := find(turnID)
	if t != nil && t.Status == codex.TurnInProgress {
		// Running in this app server for no waiter of ours: track it, look again in case it
		// ended in between, and wait.
		p.Client().Track(t.ID)
		if t = find(t.ID); t != nil && t.Status == codex.TurnInProgress {
			if _, err := b.waitTurn(ctx, p, th.ID, t.ID); err != nil {
				lost.Cause = err
				return lost
			}
			t = find(t.ID)
		}
		if t != nil {
			p.Client().Untrack(t.ID)
		}
	}
	if t == nil {
		return lost
	}
	return outcome(t, t.Items, usageOf(codex.RolloutTokens(th.RolloutPath, t.ID)))
}

// outcome is how a turn ended: a failed turn, or an interrupted one that carries an error, is
// classified by its codexErrorInfo.
func outcome(t *codex.Turn, msgs []codex.Item, tokens codex.TokenUsage) backend.Outcome {
	out := backend.Outcome{TurnID: t.ID, Tokens: tokens.Journal()}
	switch {
	case t.Status == codex.TurnCompleted:
		out.Status, out.Text = backend.Answered, codex.FinalAnswer(msgs)
	case t.Status == codex.TurnFailed, t.Status == codex.TurnInterrupted && t.Error != nil:
		out.Status, out.Failure = backend.Failed, codex.Classify(t.Error.Kind())
	case t.Status == codex.TurnInterrupted:
		out.Status = backend.Interrupted
	default:
		out.Status = backend.Lost
	}
	return out
}

// usageOf is a turn's usage from its rollout, as the protocol would have given it.
func usageOf(t journal.Tokens, _ bool) codex.TokenUsage {
	return codex.TokenUsage{TotalTokens: t.Total, InputTokens: t.Input, CachedInputTokens: t.CachedInput, OutputTokens: t.Output, ReasoningOutputTokens: t.ReasoningOutput}
}
