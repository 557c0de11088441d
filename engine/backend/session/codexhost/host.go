// Package codexhost is the session backend's Host on the real Codex App Server: it reads the
// subagents an owner's Codex session spawned with the multi_agent_v1 tools (thread/list by the
// subAgentThreadSpawn source kind, thread/read with turns) and interrupts a turn (turn/interrupt).
//
// Dial is a second client of the owner's own app server, `codex app-server --listen
// unix:///abs/app.sock`, which speaks JSON-RPC over a WebSocket on that socket: one message per
// text frame. It sees the owner's subagents live, a running one as active with its turn
// inProgress. It only observes: a request the server makes of it (an approval for a subagent's
// command) is left to the owner's client, never declined, and most notifications are opted out.
//
// Private starts an app server of crw's own over stdio on the owner's CODEX_HOME, for an owner
// whose app server has no socket. That server reads the owner's threads from disk, so:
//   - a subagent still running in the owner's process reads as notLoaded, and its in-flight turn
//     as interrupted; a caller must not take that as evidence that the attempt was lost;
//   - a subagent the owner's process has not yet written to its rollout can read as unknown
//     (host.ErrUnknownThread): Codex writes a rollout lazily;
//   - it cannot interrupt a turn of the owner's process: InterruptTurn is ErrNoInterrupt.
//
// Every request is bounded by its ctx and by the request timeout (WithTimeout, default one
// minute), every message read by a size limit (WithReadLimit, default codex.MaxMessage): a
// dead or hostile host makes a request fail, never hang. Once the connection has ended, every
// request fails with ErrClosed. The 16 MiB Codex advertises on the WebSocket
// (x-codex-websocket-max-unfragmented-message-bytes) is what it takes in: a larger request is
// refused before it is sent. Its own messages are bounded by the read limit instead, as a
// thread/read of a long thread can be larger.
package codexhost

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/session/host"
)

// ErrClosed: the connection to the host has ended (the host closed it, it broke, a message
// passed the read limit, or Close was called). Nothing more can be asked of this Host.
var ErrClosed = errors.New("codexhost: the connection to the host is closed")

// ErrNoInterrupt: a private app server cannot interrupt a turn that runs in the owner's.
var ErrNoInterrupt = errors.New("codexhost: a private app server cannot interrupt the owner's turns")

// Host is a host.Host on a Codex app server.
type Host struct {
	client  *codex.Client
	private bool
	close   func() error
}

var (
	_ host.Host         = (*Host)(nil)
	_ host.Waker        = (*Host)(nil)
	_ host.OwnerSpawner = (*Host)(nil)
)

// Option configures Dial and Private.
type Option func(*options)

type options struct {
	timeout   time.Duration
	readLimit int64
	log       string
}

// WithTimeout bounds the wait for each answer, besides the ctx of the call (default one minute).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithReadLimit bounds the size of one message from the host (default codex.MaxMessage);
// a larger one ends the connection. A thread/read of a long thread is the largest message.
func WithReadLimit(n int64) Option { return func(o *options) { o.readLimit = n } }

// WithLog appends a private app server's stderr to the file at path (Private only).
func WithLog(path string) Option { return func(o *options) { o.log = path } }

func config(opts []Option) options {
	o := options{timeout: time.Minute, readLimit: codex.MaxMessage}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// observed are the notifications a Host asks not to get: it reads on request only, and the
// host otherwise streams every subagent's events to every client.
var observed = []string{
	"error", "warning", "guardianWarning", "thread/started", "thread/closed", "thread/settings/updated",
	"thread/readState/changed", "thread/name/updated", "thread/tokenUsage/updated", "turn/started",
	"turn/completed", "turn/diff/updated", "turn/plan/updated", "item/started", "item/completed",
	"hook/started", "hook/completed", "serverRequest/resolved", "model/rerouted",
}

func clientOptions(o options) codex.ClientOptions {
	return codex.ClientOptions{Timeout: o.timeout, Observer: true, OptOut: observed}
}

// Private starts a private `codex app-server` (codexBinary; "" looks for $CRW_CODEX, then codex
// on PATH) on codexHome ("" keeps the environment's CODEX_HOME) and reads the owner's threads
// through it. See the package doc for what it cannot see. Close stops it.
func Private(ctx context.Context, codexBinary, codexHome string, opts ...Option) (*Host, error) {
	o := config(opts)
	s, err := codex.StartServer(ctx, codex.ServerOptions{Codex: codexBinary, CodexHome: codexHome, Log: o.log,
		Client: clientOptions(o)})
	if err != nil {
		return nil, fmt.Errorf("codexhost: %w", err)
	}
	return &Host{client: s.Client(), private: true, close: func() error { s.Stop(5 * time.Second); return nil }}, nil
}

// Close implements host.Host: the connection is closed (a private app server stopped).
func (h *Host) Close() error { return h.close() }

// call runs one request; an ended connection is ErrClosed.
func (h *Host) call(ctx context.Context, method string, params, result any) error {
	err := h.client.Call(ctx, method, params, result)
	if err == nil {
		return nil
	}
	if end := h.client.Err(); end != nil {
		return fmt.Errorf("%w: %s: %v", ErrClosed, method, end)
	}
	return fmt.Errorf("codexhost: %w", err)
}

// unknownThread tells whether err is Codex's answer for a thread id it does not know: -32600
// "thread not loaded: ID" (thread/read of an id neither loaded nor on disk), "thread not found:
// ID" (turn/interrupt), or "invalid thread id: ..." (an id that is not a UUID).
func unknownThread(err error) (string, bool) {
	var rpc *codex.RPCError
	if !errors.As(err, &rpc) || rpc.Code != -32600 {
		return "", false
	}
	for _, prefix := range []string{"thread not loaded: ", "thread not found: ", "invalid thread id: "} {
		if strings.HasPrefix(rpc.Message, prefix) {
			return rpc.Message, true
		}
	}
	return "", false
}

// ReadThread implements host.Host: thread/read with the thread's turns.
func (h *Host) ReadThread(ctx context.Context, id string) (host.Thread, error) {
	var r struct {
		Thread wireThread `json:"thread"`
	}
	if err := h.call(ctx, "thread/read", map[string]any{"threadId": id, "includeTurns": true}, &r); err != nil {
		if msg, ok := unknownThread(err); ok {
			return host.Thread{}, fmt.Errorf("codexhost: thread %s: %w (%s)", id, host.ErrUnknownThread, msg)
		}
		return host.Thread{}, err
	}
	return r.Thread.session(true), nil
}

// Subagent listing: pages of listPage threads, newest first, at most listPages of them.
const (
	listPage  = 100
	listPages = 100
)

// Subagents implements host.Host: thread/list by the subAgentThreadSpawn source kind,
// newest first, page after page; past listPages pages (10,000 subagents, in a CODEX_HOME that
// keeps every subagent ever spawned) only the newest are listed.
func (h *Host) Subagents(ctx context.Context) ([]host.Thread, error) {
	var all []host.Thread
	cursor := ""
	for range listPages {
		params := map[string]any{"sourceKinds": []string{"subAgentThreadSpawn"}, "limit": listPage,
			"sortKey": "created_at", "sortDirection": "desc"}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var r struct {
			Data       []wireThread `json:"data"`
			NextCursor string       `json:"nextCursor"`
		}
		if err := h.call(ctx, "thread/list", params, &r); err != nil {
			return nil, err
		}
		for i := range r.Data {
			all = append(all, r.Data[i].session(false))
		}
		if r.NextCursor == "" || len(r.Data) == 0 {
			break
		}
		cursor = r.NextCursor
	}
	return all, nil
}

// InterruptTurn implements host.Host: turn/interrupt. The turn ends soon after, interrupted.
// When the thread runs no turn Codex answers -32600 "no active turn to interrupt", when it runs
// another "expected active turn id X but found Y": an *codex.RPCError either way.
func (h *Host) InterruptTurn(ctx context.Context, threadID, turnID string) error {
	if h.private {
		return ErrNoInterrupt
	}
	err := h.call(ctx, "turn/interrupt", map[string]string{"threadId": threadID, "turnId": turnID}, nil)
	if msg, ok := unknownThread(err); ok {
		return fmt.Errorf("codexhost: thread %s: %w (%s)", threadID, host.ErrUnknownThread, msg)
	}
	return err
}

// OwnerStatus implements host.Waker: thread/read without turns.
func (h *Host) OwnerStatus(ctx context.Context, thread string) (string, error) {
	var r struct {
		Thread wireThread `json:"thread"`
	}
	if err := h.call(ctx, "thread/read", map[string]any{"threadId": thread, "includeTurns": false}, &r); err != nil {
		if msg, ok := unknownThread(err); ok {
			return "", fmt.Errorf("codexhost: thread %s: %w (%s)", thread, host.ErrUnknownThread, msg)
		}
		return "", err
	}
	return r.Thread.Status.Type, nil
}

// ThreadCwd implements host.CwdReader: a thread's working directory, read without its turns.
func (h *Host) ThreadCwd(ctx context.Context, thread string) (string, error) {
	var r struct {
		Thread wireThread `json:"thread"`
	}
	if err := h.call(ctx, "thread/read", map[string]any{"threadId": thread, "includeTurns": false}, &r); err != nil {
		return "", err
	}
	return r.Thread.Cwd, nil
}

// Wake implements host.Waker: a turn on the owner's thread, resumed first when it is not
// loaded. A private app server never wakes the owner: the turn would run outside its process.
func (h *Host) Wake(ctx context.Context, thread, text string) (string, error) {
	if h.private {
		return "", host.ErrNoWake
	}
	status, err := h.OwnerStatus(ctx, thread)
	if err != nil {
		return "", err
	}
	if status == "notLoaded" {
		if err := h.call(ctx, "thread/resume", map[string]any{"threadId": thread, "excludeTurns": true}, nil); err != nil {
			return "", err
		}
	}
	params := map[string]any{"threadId": thread, "input": []map[string]any{{"type": "text", "text": text}}}
	var r struct {
		Turn codex.Turn `json:"turn"`
	}
	if err := h.call(ctx, "turn/start", params, &r); err != nil {
		return "", err
	}
	return r.Turn.ID, nil
}

// WakeTurn implements host.Waker: the status of a wake's turn on the owner's thread, from
// the thread's turns ("" when the thread shows no such turn).
func (h *Host) WakeTurn(ctx context.Context, thread, turnID string) (string, error) {
	var r struct {
		Thread wireThread `json:"thread"`
	}
	if err := h.call(ctx, "thread/read", map[string]any{"threadId": thread, "includeTurns": true}, &r); err != nil {
		return "", err
	}
	for _, t := range r.Thread.Turns {
		if t.ID == turnID {
			return t.Status, nil
		}
	}
	return "", nil
}

// OwnerSpawns implements host.OwnerSpawner: the owner's completed spawnAgent calls, from its
// turns' collabAgentToolCall items.
func (h *Host) OwnerSpawns(ctx context.Context, owner string) ([]host.Spawn, error) {
	var r struct {
		Thread wireThread `json:"thread"`
	}
	if err := h.call(ctx, "thread/read", map[string]any{"threadId": owner, "includeTurns": true}, &r); err != nil {
		return nil, err
	}
	var out []host.Spawn
	for _, turn := range r.Thread.Turns {
		for _, it := range turn.Items {
			if it.Type == "collabAgentToolCall" && it.Tool == "spawnAgent" && it.Status == "completed" && len(it.ReceiverThreadIDs) == 1 {
				out = append(out, host.Spawn{CallID: it.ID, Agent: it.ReceiverThreadIDs[0], Prompt: it.Prompt})
			}
		}
	}
	return out, nil
}
