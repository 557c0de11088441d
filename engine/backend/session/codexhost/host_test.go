package codexhost_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/session/codexhost"
	"github.com/crw-dev/crw/engine/backend/session/host"
)

func dial(t *testing.T, f *fakeHost, opts ...codexhost.Option) *codexhost.Host {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := codexhost.Dial(ctx, "unix://"+f.sock, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	return h
}

// threadJSON is a subagent as Codex 0.169.0 sends it from thread/read, with turns: commentary
// then a final answer, a failed turn with a codexErrorInfo, and a turn under way.
const threadJSON = `{"thread":{"id":"019dd0a1-sub","parentThreadId":"019dd0a0-owner","sessionId":"019dd0a0-owner",
 "agentRole":"reviewer","agentNickname":"Curie","model":"mock-role-model","reasoningEffort":"high",
 "status":{"type":"idle"},"threadSource":"subagent","preview":"crw-flow-op: c1/t1-a1\nReview the diff.",
 "cwd":"/work/repo","path":"/home/u/.codex/sessions/2026/12/01/rollout-2026-12-01T08-00-00-019dd0a1-sub.jsonl",
 "ephemeral":false,"modelProvider":"mock","cliVersion":"0.169.0","createdAt":1796112000,"updatedAt":1796112001,
 "source":{"subAgent":{"thread_spawn":{"parent_thread_id":"019dd0a0-owner","depth":1,"agent_path":null,"agent_nickname":"Curie","agent_role":"reviewer"}}},
 "turns":[
  {"id":"turn-1","rootTurnId":"owner-turn","status":"completed","error":null,"itemsView":"full","startedAt":1796112000,"items":[
   {"type":"userMessage","id":"u1","content":[{"type":"text","text":"crw-flow-op: c1/t1-a1\nReview the diff.","text_elements":[]}]},
   {"type":"reasoning","id":"r1","summary":["Reading the diff"],"content":[]},
   {"type":"agentMessage","id":"m1","text":"Looking at the diff.","phase":"commentary","memoryCitation":null},
   {"type":"agentMessage","id":"m2","text":"{\"verdict\":\"ok\"}","phase":"final_answer","memoryCitation":null}]},
  {"id":"turn-2","status":"failed","error":{"message":"unexpected status 502 Bad Gateway: Bad gateway.","codexErrorInfo":{"httpConnectionFailed":{"httpStatusCode":502}},"additionalDetails":null},"items":[
   {"type":"userMessage","id":"u2","content":[{"type":"localImage","path":"/tmp/a.png"},{"type":"text","text":"Again, "},{"type":"text","text":"please."}]}]},
  {"id":"turn-3","status":"inProgress","error":null,"items":[
   {"type":"userMessage","id":"u3","content":[{"type":"text","text":"Once more."}]},
   {"type":"userMessage","id":"u4","content":[{"type":"text","text":"A steer."}]}]}
 ]},"readState":{"firstUnread":null,"revision":"r1"}}`

func TestReadThreadMapsASubagent(t *testing.T) {
	f := newFakeHost(t, func(c *websocket.Conn, r request) { reply(c, r.ID, threadJSON) })
	h := dial(t, f)
	th, err := h.ReadThread(context.Background(), "019dd0a1-sub")
	require.NoError(t, err)
	assert.Equal(t, host.Thread{
		ID:             "019dd0a1-sub",
		ParentThreadID: "019dd0a0-owner",
		AgentRole:      "reviewer",
		Model:          "mock-role-model",
		Effort:         "high",
		Cwd:            "/work/repo",
		RolloutPath:    "/home/u/.codex/sessions/2026/12/01/rollout-2026-12-01T08-00-00-019dd0a1-sub.jsonl",
		Status:         "idle",
		Preview:        "crw-flow-op: c1/t1-a1\nReview the diff.",
		Turns: []host.Turn{
			{ID: "turn-1", Status: "completed", FirstUserMessage: "crw-flow-op: c1/t1-a1\nReview the diff.",
				Answer: `{"verdict":"ok"}`, HasAnswer: true},
			{ID: "turn-2", Status: "failed", FirstUserMessage: "Again, please.",
				Error: &codex.TurnError{Message: "unexpected status 502 Bad Gateway: Bad gateway.",
					CodexErrorInfo: json.RawMessage(`{"httpConnectionFailed":{"httpStatusCode":502}}`)}},
			{ID: "turn-3", Status: "inProgress", FirstUserMessage: "Once more."},
		},
	}, th)
	assert.Equal(t, [][2]string{{"thread/read", `{"includeTurns":true,"threadId":"019dd0a1-sub"}`}}, f.got())
}

// A top-level thread: nulls read as "", no turns as an empty list (not nil: it was read with them).
func TestReadThreadOfAnOwner(t *testing.T) {
	f := newFakeHost(t, func(c *websocket.Conn, r request) {
		reply(c, r.ID, `{"thread":{"id":"owner","parentThreadId":null,"agentRole":null,"model":null,"reasoningEffort":null,
			"status":{"type":"active","activeFlags":[]},"preview":"","cwd":"/w","path":null,"source":"vscode","turns":[]}}`)
	})
	th, err := dial(t, f).ReadThread(context.Background(), "owner")
	require.NoError(t, err)
	assert.Equal(t, host.Thread{ID: "owner", Cwd: "/w", Status: "active", Turns: []host.Turn{}}, th)
}

func agentMessage(text string, phase any) map[string]any {
	return map[string]any{"type": "agentMessage", "id": "m", "text": text, "phase": phase}
}

// The answer of a turn: its last final_answer message; from a provider without phases its last
// message, unless commentary came before it; never a commentary message.
func TestTurnAnswerRule(t *testing.T) {
	user := map[string]any{"type": "userMessage", "content": []any{map[string]any{"type": "text", "text": "go"}}}
	cases := []struct {
		name   string
		items  []any
		answer string
		has    bool
	}{
		{"commentary then final_answer", []any{user, agentMessage("checking", "commentary"), agentMessage("done", "final_answer")}, "done", true},
		{"the last of two final answers", []any{agentMessage("first", "final_answer"), agentMessage("second", "final_answer")}, "second", true},
		{"final_answer then commentary", []any{agentMessage("done", "final_answer"), agentMessage("more", "commentary")}, "done", true},
		{"final_answer over a message without phase", []any{agentMessage("done", "final_answer"), agentMessage("plain", nil)}, "done", true},
		{"provider without phases: the last", []any{user, agentMessage("one", nil), map[string]any{"type": "reasoning"}, agentMessage("two", nil)}, "two", true},
		{"no phase before commentary", []any{agentMessage("one", nil), agentMessage("aside", "commentary")}, "one", true},
		{"no phase after commentary", []any{agentMessage("aside", "commentary"), agentMessage("two", nil)}, "", false},
		{"commentary only", []any{agentMessage("aside", "commentary")}, "", false},
		{"an empty final answer", []any{agentMessage("", "final_answer")}, "", true},
		{"no agent message", []any{user}, "", false},
	}
	var turns []any
	for i, c := range cases {
		turns = append(turns, map[string]any{"id": fmt.Sprint(i), "status": "completed", "items": c.items})
	}
	result, err := json.Marshal(map[string]any{"thread": map[string]any{"id": "t", "status": map[string]any{"type": "idle"}, "turns": turns}})
	require.NoError(t, err)
	f := newFakeHost(t, func(c *websocket.Conn, r request) { reply(c, r.ID, string(result)) })
	th, err := dial(t, f).ReadThread(context.Background(), "t")
	require.NoError(t, err)
	require.Len(t, th.Turns, len(cases))
	for i, c := range cases {
		assert.Equal(t, c.answer, th.Turns[i].Answer, c.name)
		assert.Equal(t, c.has, th.Turns[i].HasAnswer, c.name)
	}
}

// A failed or interrupted turn keeps its error: the message, and codexErrorInfo as sent (a
// string kind stays a JSON string); a null codexErrorInfo is none.
func TestTurnErrors(t *testing.T) {
	f := newFakeHost(t, func(c *websocket.Conn, r request) {
		reply(c, r.ID, `{"thread":{"id":"t","status":{"type":"systemError"},"turns":[
			{"id":"a","status":"failed","error":{"message":"Codex ran out of room in the model's context window.","codexErrorInfo":"contextWindowExceeded"},"items":[]},
			{"id":"b","status":"interrupted","error":{"message":"aborted","codexErrorInfo":null},"items":[]},
			{"id":"c","status":"failed","error":{"message":"stream disconnected"},"items":[]}]}}`)
	})
	th, err := dial(t, f).ReadThread(context.Background(), "t")
	require.NoError(t, err)
	assert.Equal(t, []host.Turn{
		{ID: "a", Status: "failed", Error: &codex.TurnError{Message: "Codex ran out of room in the model's context window.",
			CodexErrorInfo: json.RawMessage(`"contextWindowExceeded"`)}},
		{ID: "b", Status: "interrupted", Error: &codex.TurnError{Message: "aborted"}},
		{ID: "c", Status: "failed", Error: &codex.TurnError{Message: "stream disconnected"}},
	}, th.Turns)
	assert.Equal(t, "systemError", th.Status)
}

// What Codex 0.169.0 answers for an id it does not know (-32600 "thread not loaded: ID"), or one
// that is no UUID ("invalid thread id: ..."), is ErrUnknownThread; another error is not.
func TestReadThreadUnknown(t *testing.T) {
	f := newFakeHost(t, func(c *websocket.Conn, r request) {
		var p struct{ ThreadID string }
		json.Unmarshal(r.Params, &p)
		switch p.ThreadID {
		case "bogus":
			fail(c, r.ID, -32600, "invalid thread id: invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `o` at 2")
		case "ephemeral":
			fail(c, r.ID, -32600, "ephemeral threads do not support includeTurns")
		case "odd":
			fail(c, r.ID, -32603, "thread not loaded: odd")
		default:
			fail(c, r.ID, -32600, "thread not loaded: "+p.ThreadID)
		}
	})
	h := dial(t, f)
	ctx := context.Background()
	_, err := h.ReadThread(ctx, "019b0000-0000-7000-8000-000000000000")
	assert.ErrorIs(t, err, host.ErrUnknownThread)
	assert.EqualError(t, err, "codexhost: thread 019b0000-0000-7000-8000-000000000000: the host does not know the thread (thread not loaded: 019b0000-0000-7000-8000-000000000000)")
	_, err = h.ReadThread(ctx, "bogus")
	assert.ErrorIs(t, err, host.ErrUnknownThread)

	_, err = h.ReadThread(ctx, "ephemeral")
	assert.NotErrorIs(t, err, host.ErrUnknownThread)
	var rpc *codex.RPCError
	require.ErrorAs(t, err, &rpc)
	assert.Equal(t, codex.RPCError{Code: -32600, Message: "ephemeral threads do not support includeTurns"}, *rpc)
	_, err = h.ReadThread(ctx, "odd")
	assert.NotErrorIs(t, err, host.ErrUnknownThread, "only -32600 is Codex's unknown thread")
}

// Subagents asks for the subagent source kind, newest first, and follows nextCursor to the end.
func TestSubagentsFollowsCursors(t *testing.T) {
	f := newFakeHost(t, func(c *websocket.Conn, r request) {
		var p struct{ Cursor string }
		json.Unmarshal(r.Params, &p)
		switch p.Cursor {
		case "":
			reply(c, r.ID, `{"data":[
				{"id":"s3","parentThreadId":"o2","agentRole":"reviewer","model":"m","reasoningEffort":"low","status":{"type":"active","activeFlags":[]},"preview":"crw-flow-op: c3/t1-a1","cwd":"/w","path":"/h/s3.jsonl","turns":[]},
				{"id":"s2","parentThreadId":"o1","agentRole":null,"model":"m","status":{"type":"notLoaded"},"preview":"","cwd":"/w","path":"/h/s2.jsonl","turns":[]}],
				"readStates":{},"nextCursor":"page-2","backwardsCursor":"b"}`)
		case "page-2":
			reply(c, r.ID, `{"data":[{"id":"s1","parentThreadId":"o1","agentRole":"default","status":{"type":"idle"},"turns":[]}],"nextCursor":null}`)
		}
	})
	subs, err := dial(t, f).Subagents(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []host.Thread{
		{ID: "s3", ParentThreadID: "o2", AgentRole: "reviewer", Model: "m", Effort: "low", Cwd: "/w", RolloutPath: "/h/s3.jsonl",
			Status: "active", Preview: "crw-flow-op: c3/t1-a1"},
		{ID: "s2", ParentThreadID: "o1", Model: "m", Cwd: "/w", RolloutPath: "/h/s2.jsonl", Status: "notLoaded"},
		{ID: "s1", ParentThreadID: "o1", AgentRole: "default", Status: "idle"},
	}, subs)
	assert.Equal(t, [][2]string{
		{"thread/list", `{"limit":100,"sortDirection":"desc","sortKey":"created_at","sourceKinds":["subAgentThreadSpawn"]}`},
		{"thread/list", `{"cursor":"page-2","limit":100,"sortDirection":"desc","sortKey":"created_at","sourceKinds":["subAgentThreadSpawn"]}`},
	}, f.got())
}

// A host that keeps giving a next cursor is read for 100 pages and no more.
func TestSubagentsStopsAfterItsPageLimit(t *testing.T) {
	n := 0
	f := newFakeHost(t, func(c *websocket.Conn, r request) {
		n++
		reply(c, r.ID, fmt.Sprintf(`{"data":[{"id":"s%d","status":{"type":"idle"}}],"nextCursor":"p%d"}`, n, n))
	})
	subs, err := dial(t, f).Subagents(context.Background())
	require.NoError(t, err)
	assert.Len(t, subs, 100)
	assert.Equal(t, "s100", subs[99].ID)
}

func TestInterruptTurn(t *testing.T) {
	f := newFakeHost(t, func(c *websocket.Conn, r request) {
		var p struct{ ThreadID, TurnID string }
		json.Unmarshal(r.Params, &p)
		switch {
		case p.ThreadID == "gone":
			fail(c, r.ID, -32600, "thread not found: gone")
		case p.TurnID != "u1":
			fail(c, r.ID, -32600, "expected active turn id "+p.TurnID+" but found u1")
		default:
			reply(c, r.ID, `{}`)
		}
	})
	h := dial(t, f)
	ctx := context.Background()
	require.NoError(t, h.InterruptTurn(ctx, "sub", "u1"))
	assert.ErrorIs(t, h.InterruptTurn(ctx, "gone", "u1"), host.ErrUnknownThread)
	err := h.InterruptTurn(ctx, "sub", "u0")
	var rpc *codex.RPCError
	require.ErrorAs(t, err, &rpc)
	assert.Equal(t, "expected active turn id u0 but found u1", rpc.Message)
	assert.Equal(t, [][2]string{
		{"turn/interrupt", `{"threadId":"sub","turnId":"u1"}`},
		{"turn/interrupt", `{"threadId":"gone","turnId":"u1"}`},
		{"turn/interrupt", `{"threadId":"sub","turnId":"u0"}`},
	}, f.got())
}

// A message past the read limit ends the connection with a clear error, not an allocation of
// its size; every later request is ErrClosed at once.
func TestOversizedMessageEndsTheConnection(t *testing.T) {
	f := newFakeHost(t, func(c *websocket.Conn, r request) {
		reply(c, r.ID, `{"thread":{"id":"t","preview":"`+strings.Repeat("x", 2048)+`"}}`)
	})
	h := dial(t, f, codexhost.WithReadLimit(1024))
	_, err := h.ReadThread(context.Background(), "t")
	assert.ErrorIs(t, err, codexhost.ErrClosed)
	assert.Contains(t, err.Error(), "the host sent a message longer than 1024 bytes")
	_, err = h.Subagents(context.Background())
	assert.ErrorIs(t, err, codexhost.ErrClosed)
}

// A request larger than the host says it takes is refused before it is sent (Codex would close
// the socket); the connection stays up.
func TestRequestOverTheHostsLimit(t *testing.T) {
	f := newFakeHostTaking(t, "1000", func(c *websocket.Conn, r request) { reply(c, r.ID, `{"thread":{"id":"t","turns":[]}}`) })
	h := dial(t, f)
	_, err := h.ReadThread(context.Background(), strings.Repeat("x", 1000))
	assert.ErrorContains(t, err, "a request of 1076 bytes, over the host's limit of 1000")
	assert.Empty(t, f.got())
	_, err = h.ReadThread(context.Background(), "t")
	require.NoError(t, err)
}

// The host going away in the middle of a request fails it with ErrClosed, whether it closes
// the WebSocket or just the socket.
func TestHostClosesMidRequest(t *testing.T) {
	for name, tc := range map[string]struct {
		end  func(c *websocket.Conn)
		says string
	}{
		"close frame": {func(c *websocket.Conn) { c.Close(websocket.StatusGoingAway, "shutting down") }, "the host closed the WebSocket"},
		"socket":      {func(c *websocket.Conn) { c.CloseNow() }, "the host closed the connection"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeHost(t, func(c *websocket.Conn, r request) { tc.end(c) })
			h := dial(t, f)
			_, err := h.ReadThread(context.Background(), "t")
			assert.ErrorIs(t, err, codexhost.ErrClosed)
			assert.Contains(t, err.Error(), tc.says)
			assert.ErrorIs(t, h.InterruptTurn(context.Background(), "t", "u"), codexhost.ErrClosed)
		})
	}
}

// A host that never answers: the request ends with its ctx, or with the request timeout; the
// connection stays usable.
func TestHostThatNeverAnswers(t *testing.T) {
	f := newFakeHost(t, func(c *websocket.Conn, r request) {
		if strings.Contains(string(r.Params), "answered") {
			reply(c, r.ID, `{"thread":{"id":"answered","status":{"type":"idle"},"turns":[]}}`)
		}
	})
	h := dial(t, f, codexhost.WithTimeout(300*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := h.ReadThread(ctx, "silent")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 30*time.Second, "it ends with its ctx, not never (a loaded machine may be slow to say so)")

	_, err = h.Subagents(context.Background())
	assert.ErrorIs(t, err, codex.ErrLost, "the request timeout")
	assert.NotErrorIs(t, err, codexhost.ErrClosed)

	th, err := h.ReadThread(context.Background(), "answered")
	require.NoError(t, err)
	assert.Equal(t, "answered", th.ID)
}

func TestDialAddresses(t *testing.T) {
	f := newFakeHost(t, func(c *websocket.Conn, r request) { reply(c, r.ID, `{"thread":{"id":"t","turns":[]}}`) })
	ctx := context.Background()

	h, err := codexhost.Dial(ctx, f.sock) // a plain absolute path
	require.NoError(t, err)
	_, err = h.ReadThread(ctx, "t")
	require.NoError(t, err)
	require.NoError(t, h.Close())
	_, err = h.ReadThread(ctx, "t")
	assert.ErrorIs(t, err, codexhost.ErrClosed)
	assert.Contains(t, err.Error(), "closed by crw")

	// A path too long for a socket address is dialled through the link Codex leaves there.
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	require.NoError(t, os.Mkdir(long, 0o700))
	require.NoError(t, os.Symlink(f.sock, filepath.Join(long, "app.sock")))
	h, err = codexhost.Dial(ctx, "unix://"+filepath.Join(long, "app.sock"))
	require.NoError(t, err)
	h.Close()

	_, err = codexhost.Dial(ctx, "unix://app.sock")
	assert.EqualError(t, err, `codexhost: "unix://app.sock" is not a unix:// address or an absolute socket path`)
	_, err = codexhost.Dial(ctx, filepath.Join(t.TempDir(), "none.sock"))
	assert.ErrorContains(t, err, "no such file or directory")
}

// A socket that takes the connection and says nothing (no upgrade, or no initialize answer)
// fails the dial when its ctx ends.
func TestDialBoundedByItsContext(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "mute.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = codexhost.Dial(ctx, sock)
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	mute := newFakeHost(t, nil) // upgrades, and answers nothing
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = codexhost.Dial(ctx, mute.sock)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "initialize")
}

func TestPrivateWithoutCodex(t *testing.T) {
	_, err := codexhost.Private(context.Background(), filepath.Join(t.TempDir(), "codex"), t.TempDir())
	assert.True(t, errors.Is(err, codex.ErrCodexMissing), "%v", err)
}
