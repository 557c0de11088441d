package codex

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend"
)

// pipeServer is the server end of a Client: what the client wrote, line by line, and a writer
// for what the server says.
type pipeServer struct {
	in  *bufio.Scanner
	out *io.PipeWriter
}

func newPipeClient(t *testing.T, onRequest func(ServerRequest)) (*Client, *pipeServer) {
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	t.Cleanup(func() { sw.Close(); sr.Close() })
	return NewClient(cr, cw, 2*time.Second, onRequest), &pipeServer{in: bufio.NewScanner(sr), out: sw}
}

func (s *pipeServer) read(t *testing.T) map[string]any {
	t.Helper()
	require.True(t, s.in.Scan(), "the client wrote nothing")
	var m map[string]any
	require.NoError(t, json.Unmarshal(s.in.Bytes(), &m))
	return m
}

func (s *pipeServer) say(lines ...string) {
	for _, l := range lines {
		io.WriteString(s.out, l+"\n")
	}
}

func TestClientRoutesATurn(t *testing.T) {
	c, s := newPipeClient(t, nil)
	started := make(chan string, 1)
	go func() {
		id, err := c.StartTurn(context.Background(), "th", "hi", json.RawMessage(`{"type":"object"}`))
		assert.NoError(t, err)
		started <- id
	}()
	req := s.read(t)
	assert.Equal(t, "turn/start", req["method"])
	assert.Equal(t, map[string]any{"type": "object"}, req["params"].(map[string]any)["outputSchema"])
	s.say(`{"method":"turn/started","params":{"threadId":"th","turn":{"id":"u1","status":"inProgress"}}}`,
		`{"id":1,"result":{"turn":{"id":"u1","status":"inProgress"}}}`,
		`{"method":"item/completed","params":{"threadId":"th","turnId":"u1","item":{"type":"agentMessage","text":"thinking","phase":"commentary"}}}`,
		`{"method":"thread/tokenUsage/updated","params":{"threadId":"th","turnId":"u1","tokenUsage":{"last":{"totalTokens":10,"inputTokens":8,"outputTokens":2}}}}`,
		`{"method":"item/completed","params":{"threadId":"th","turnId":"u1","item":{"type":"agentMessage","text":"{}","phase":"final_answer"}}}`,
		`{"method":"thread/tokenUsage/updated","params":{"threadId":"th","turnId":"u1","tokenUsage":{"last":{"totalTokens":5,"inputTokens":4,"cachedInputTokens":3,"outputTokens":1}}}}`,
		`{"method":"turn/completed","params":{"threadId":"th","turn":{"id":"u1","status":"completed","items":[]}}}`,
		`{"method":"thread/tokenUsage/updated","params":{"threadId":"th","turnId":"u1","tokenUsage":{"last":{"totalTokens":99}}}}`)
	id := <-started
	res, err := c.WaitTurn(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, TurnCompleted, res.Turn.Status)
	assert.Equal(t, "{}", FinalAnswer(res.Messages))
	assert.Equal(t, TokenUsage{TotalTokens: 15, InputTokens: 12, CachedInputTokens: 3, OutputTokens: 3}, res.Tokens)
}

func TestClientDeclinesServerRequests(t *testing.T) {
	got := make(chan ServerRequest, 2)
	_, s := newPipeClient(t, func(r ServerRequest) { got <- r })
	s.say(`{"id":0,"method":"item/commandExecution/requestApproval","params":{"threadId":"th","turnId":"u1","command":"rm -rf /"}}`)
	assert.Equal(t, map[string]any{"id": 0.0, "result": map[string]any{"decision": "decline"}}, s.read(t))
	r := <-got
	assert.Equal(t, ServerRequest{Method: "item/commandExecution/requestApproval", ThreadID: "th", TurnID: "u1", Params: r.Params, Answer: "decline"}, r)

	s.say(`{"id":"x","method":"some/newRequest","params":{}}`)
	reply := s.read(t)
	assert.Equal(t, "x", reply["id"])
	assert.Equal(t, -32601.0, reply["error"].(map[string]any)["code"])
	assert.Equal(t, "error", (<-got).Answer)
}

func TestClientLosesRequestsWhenTheServerEnds(t *testing.T) {
	c, s := newPipeClient(t, nil)
	c.Track("u1")
	errc := make(chan error, 1)
	go func() { errc <- c.Call(context.Background(), "thread/start", nil, nil) }()
	s.read(t)
	s.out.Close()
	assert.True(t, errors.Is(<-errc, ErrLost))
	_, err := c.WaitTurn(context.Background(), "u1")
	assert.True(t, errors.Is(err, ErrLost))
	assert.True(t, errors.Is(c.Call(context.Background(), "thread/start", nil, nil), ErrLost))
}

func TestClientTimeoutIsLost(t *testing.T) {
	c, s := newPipeClient(t, nil)
	c.timeout = 50 * time.Millisecond
	go s.in.Scan() // read the request, never answer it
	assert.True(t, errors.Is(c.Call(context.Background(), "thread/start", nil, nil), ErrLost))
}

func TestFinalAnswer(t *testing.T) {
	msg := func(text, phase string) Item { return Item{Type: "agentMessage", Text: text, Phase: phase} }
	tests := []struct {
		name  string
		items []Item
		want  string
	}{
		{"last final_answer", []Item{msg("a", "final_answer"), msg("b", "commentary"), msg("c", "final_answer")}, "c"},
		{"final_answer wins over no phase", []Item{msg("a", "final_answer"), msg("b", "")}, "a"},
		{"no phase at all: the last", []Item{msg("a", ""), {Type: "reasoning"}, msg("b", "")}, "b"},
		{"no phase after commentary", []Item{msg("a", "commentary"), msg("b", "")}, ""},
		{"no phase before commentary", []Item{msg("a", ""), msg("b", "commentary")}, "a"},
		{"nothing", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, FinalAnswer(tt.items)) })
	}
	// An empty message is an answer; commentary alone, or no message, is none.
	text, ok := Answer([]Item{msg("", "final_answer")})
	assert.Equal(t, "", text)
	assert.True(t, ok)
	_, ok = Answer([]Item{msg("thinking", "commentary")})
	assert.False(t, ok)
	_, ok = Answer([]Item{{Type: "userMessage"}})
	assert.False(t, ok)
}

// An observer leaves the server's requests to the host's own client: nothing is written back.
func TestObserverLeavesServerRequests(t *testing.T) {
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	t.Cleanup(func() { sw.Close(); sr.Close() })
	got := make(chan ServerRequest, 1)
	c := NewConnClient(LineConn(cr, cw), ClientOptions{Timeout: 2 * time.Second, Observer: true, OnRequest: func(r ServerRequest) { got <- r }})
	s := &pipeServer{in: bufio.NewScanner(sr), out: sw}
	s.say(`{"id":0,"method":"item/commandExecution/requestApproval","params":{"threadId":"th","turnId":"u1"}}`)
	r := <-got
	assert.Equal(t, ServerRequest{Method: "item/commandExecution/requestApproval", ThreadID: "th", TurnID: "u1", Params: r.Params}, r)
	// The next thing the server reads is the client's request, not an answer to its own.
	go c.Call(context.Background(), "thread/list", nil, nil)
	assert.Equal(t, "thread/list", s.read(t)["method"])
}

func TestTurnErrorKind(t *testing.T) {
	for raw, want := range map[string]string{
		`"contextWindowExceeded"`:                         "contextWindowExceeded",
		`{"httpConnectionFailed":{"httpStatusCode":502}}`: "httpConnectionFailed",
		`null`: "",
	} {
		assert.Equal(t, want, (&TurnError{CodexErrorInfo: json.RawMessage(raw)}).Kind(), raw)
	}
	assert.Equal(t, "", (*TurnError)(nil).Kind())
}

func TestEnvConfigPutsTMPDIRFirst(t *testing.T) {
	data, err := json.Marshal(EnvConfig(map[string]string{"A": "1", "TMPDIR": "/t", "Z": "2"}))
	require.NoError(t, err)
	assert.Equal(t, `{"shell_environment_policy.set.TMPDIR":"/t","shell_environment_policy.set.A":"1","shell_environment_policy.set.Z":"2"}`, string(data))
}

// TestThreadShellGetsTheToolPathBeforeItsPATH: a run's recorded PATH (its tool directories
// before $PATH) reaches a thread's shell as a literal PATH, the tool directories before the
// process's own, never doubled when the process put them there already.
func TestThreadShellGetsTheToolPathBeforeItsPATH(t *testing.T) {
	recorded := map[string]string{"TMPDIR": "/t", "PATH": "/opt/go/bin" + backend.PathTail, "GOTOOLCHAIN": "local"}
	t.Setenv("PATH", "/usr/bin:/bin")
	data, err := json.Marshal(EnvConfig(backend.ProcessEnv(recorded)))
	require.NoError(t, err)
	assert.Equal(t, `{"shell_environment_policy.set.TMPDIR":"/t","shell_environment_policy.set.GOTOOLCHAIN":"local","shell_environment_policy.set.PATH":"/opt/go/bin:/usr/bin:/bin"}`, string(data))
	t.Setenv("PATH", "/opt/go/bin:/usr/bin:/bin") // a run process: its recorded env is in its own
	assert.Equal(t, "/opt/go/bin:/usr/bin:/bin", backend.ProcessEnv(recorded)["PATH"])
}
