package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// ErrLost is the cause of a request that got no answer: the app server died, its pipe broke,
// or it did not answer in time. Whether the request took effect is unknown.
var ErrLost = errors.New("appserver: the request got no answer")

// RPCError is a JSON-RPC error the app server answered with. Its data may carry a
// codexErrorInfo, as a failed turn's error does.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Info is the codexErrorInfo kind the error's data carries ("" when it has none).
func (e *RPCError) Info() string {
	var d struct {
		CodexErrorInfo json.RawMessage `json:"codexErrorInfo"`
	}
	if len(e.Data) == 0 || json.Unmarshal(e.Data, &d) != nil || len(d.CodexErrorInfo) == 0 {
		return ""
	}
	return (&TurnError{CodexErrorInfo: d.CodexErrorInfo}).Kind()
}

func (e *RPCError) Error() string { return fmt.Sprintf("appserver: error %d: %s", e.Code, e.Message) }

// TurnResult is how a turn ended, as the client saw it live.
type TurnResult struct {
	Turn     Turn   // from turn/completed: status and error
	Messages []Item // the turn's agent messages, in the order they completed
	Tokens   TokenUsage
}

// Client speaks JSON-RPC to one app server over a Conn: its stdio, or a WebSocket. One
// goroutine reads everything the server sends: answers go to the request that waits for them,
// notifications to the turn they belong to, and every request of the server is answered at
// once by the decline policy (an observer leaves them unanswered).
type Client struct {
	conn      Conn
	wmu       sync.Mutex
	timeout   time.Duration
	onRequest func(ServerRequest)
	observer  bool
	optOut    []string

	mu      sync.Mutex
	next    int64
	pending map[int64]chan reply
	turns   map[string]*turnState
	closing map[string]chan struct{} // threads unsubscribed from, until thread/closed
	err     error                    // why the connection ended; set before done closes
	done    chan struct{}            // closed when the server's output ends
}

type reply struct {
	result json.RawMessage
	err    error
}

type turnState struct {
	res  TurnResult
	done chan struct{} // closed at turn/completed
}

// ClientOptions configure a Client.
type ClientOptions struct {
	// Timeout bounds the wait for an answer (and the write of a request): a request that gets
	// none in time fails with ErrLost. Default one minute.
	Timeout time.Duration
	// OnRequest, when not nil, is told of every server request after it was answered (or left
	// unanswered); it runs on the reading goroutine and must not block.
	OnRequest func(ServerRequest)
	// Observer leaves the server's requests unanswered: a client that only reads another
	// client's host must not decline that client's approvals.
	Observer bool
	// OptOut are notifications the server is asked not to send, besides the ones no client
	// of crw reads.
	OptOut []string
}

// NewClient starts reading r, the server's stdout, one message a line; requests are written to
// w. A request that gets no answer within timeout fails with ErrLost. onRequest, when not nil,
// is told of every server request after it was answered; it runs on the reading goroutine and
// must not block.
func NewClient(r io.Reader, w io.Writer, timeout time.Duration, onRequest func(ServerRequest)) *Client {
	return NewConnClient(LineConn(r, w), ClientOptions{Timeout: timeout, OnRequest: onRequest})
}

// NewConnClient starts reading conn.
func NewConnClient(conn Conn, o ClientOptions) *Client {
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	c := &Client{conn: conn, timeout: o.Timeout, onRequest: o.OnRequest, observer: o.Observer, optOut: o.OptOut,
		pending: map[int64]chan reply{}, turns: map[string]*turnState{}, closing: map[string]chan struct{}{},
		done: make(chan struct{})}
	go c.read()
	return c
}

// Done is closed when the server's output has ended; Err then says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the connection ended, or nil while it is up.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

type inbound struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
}

// maxTurnPages bounds how many pages of a thread's turns are read: 50 turns a page, far
// beyond any thread crw makes, and a host that keeps giving a next cursor cannot make a
// resume read for ever.
const maxTurnPages = 10_000

func (c *Client) read() {
	var err error
	for {
		var msg []byte
		if msg, err = c.conn.Read(); len(msg) > 0 {
			var m inbound
			if json.Unmarshal(msg, &m) == nil {
				c.dispatch(&m)
			}
		}
		if err != nil {
			break
		}
	}
	c.mu.Lock()
	c.err = fmt.Errorf("appserver: connection ended (%v): %w", err, ErrLost)
	for id, ch := range c.pending {
		ch <- reply{err: c.err}
		delete(c.pending, id)
	}
	c.mu.Unlock()
	close(c.done)
}

func (c *Client) dispatch(m *inbound) {
	switch {
	case m.ID != nil && m.Method == "":
		var id int64
		if json.Unmarshal(m.ID, &id) != nil {
			return
		}
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ch != nil {
			if m.Error != nil {
				ch <- reply{err: m.Error}
			} else {
				ch <- reply{result: m.Result}
			}
		}
	case m.ID != nil:
		c.answer(m)
	default:
		c.notification(m.Method, m.Params)
	}
}

// notification routes what concerns a turn to its state; the rest is of no use to crw.
func (c *Client) notification(method string, params json.RawMessage) {
	var p struct {
		ThreadID   string `json:"threadId"`
		TurnID     string `json:"turnId"`
		Turn       Turn   `json:"turn"`
		Item       Item   `json:"item"`
		TokenUsage struct {
			Last TokenUsage `json:"last"`
		} `json:"tokenUsage"`
	}
	switch method {
	case "turn/started", "turn/completed", "item/completed", "thread/tokenUsage/updated", "thread/closed":
		if json.Unmarshal(params, &p) != nil {
			return
		}
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch method {
	case "turn/started":
		c.stateLocked(p.Turn.ID)
	case "turn/completed":
		if st := c.turns[p.Turn.ID]; st != nil && st.res.Turn.ID == "" {
			st.res.Turn = p.Turn
			close(st.done)
		}
	case "item/completed":
		if st := c.turns[p.TurnID]; st != nil && st.res.Turn.ID == "" && p.Item.Type == "agentMessage" {
			st.res.Messages = append(st.res.Messages, p.Item)
		}
	case "thread/closed":
		if ch := c.closing[p.ThreadID]; ch != nil {
			close(ch)
			delete(c.closing, p.ThreadID)
		}
	case "thread/tokenUsage/updated":
		// One update per model call; "last" is that call's usage. Updates for a turn that
		// has ended (a resumed thread restores its totals) are not the turn's.
		if st := c.turns[p.TurnID]; st != nil && st.res.Turn.ID == "" {
			st.res.Tokens = st.res.Tokens.add(p.TokenUsage.Last)
		}
	}
}

func (c *Client) stateLocked(turnID string) *turnState {
	st := c.turns[turnID]
	if st == nil {
		st = &turnState{done: make(chan struct{})}
		c.turns[turnID] = st
	}
	return st
}

// Track makes the client keep what the server says of a turn from now on, so WaitTurn can
// wait for it. A turn started through StartTurn is tracked already.
func (c *Client) Track(turnID string) {
	c.mu.Lock()
	c.stateLocked(turnID)
	c.mu.Unlock()
}

// Tracks tells whether the client keeps what the server says of a turn.
func (c *Client) Tracks(turnID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.turns[turnID] != nil
}

// Untrack forgets a tracked turn nobody will wait for.
func (c *Client) Untrack(turnID string) {
	c.mu.Lock()
	delete(c.turns, turnID)
	c.mu.Unlock()
}

// errUntracked: the client never saw the turn start (another process started it).
var errUntracked = fmt.Errorf("appserver: turn not started on this connection: %w", ErrLost)

// WaitTurn waits until a tracked turn has completed.
func (c *Client) WaitTurn(ctx context.Context, turnID string) (TurnResult, error) {
	c.mu.Lock()
	st := c.turns[turnID]
	c.mu.Unlock()
	if st == nil {
		return TurnResult{}, errUntracked
	}
	select {
	case <-st.done:
	case <-c.done:
		select {
		case <-st.done:
		default:
			return TurnResult{}, c.Err()
		}
	case <-ctx.Done():
		return TurnResult{}, ctx.Err()
	}
	c.Untrack(turnID)
	return st.res, nil
}

func (c *Client) write(ctx context.Context, msg any) error {
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.conn.Write(ctx, data); err != nil {
		return fmt.Errorf("appserver: write: %v: %w", err, ErrLost)
	}
	return nil
}

// Call sends a request and decodes its result into result (when not nil). It fails with
// ErrLost when no answer comes: the connection ended or the client's timeout passed.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, c.err)
	}
	c.next++
	id := c.next
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	msg := struct {
		ID     int64  `json:"id"`
		Method string `json:"method"`
		Params any    `json:"params,omitempty"`
	}{id, method, params}
	wctx, cancel := context.WithTimeout(ctx, c.timeout)
	err := c.write(wctx, msg)
	cancel()
	if err != nil {
		forget()
		return fmt.Errorf("%s: %w", method, err)
	}
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	var r reply
	select {
	case r = <-ch:
	case <-timer.C:
		forget()
		return fmt.Errorf("appserver: %s: no answer in %v: %w", method, c.timeout, ErrLost)
	case <-ctx.Done():
		forget()
		return fmt.Errorf("appserver: %s: %w", method, ctx.Err())
	}
	if r.err != nil {
		return fmt.Errorf("%s: %w", method, r.err)
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(r.result, result); err != nil {
		return fmt.Errorf("appserver: %s: decode result: %w", method, err)
	}
	return nil
}

// Notify sends a notification.
func (c *Client) Notify(method string, params any) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	return c.write(ctx, struct {
		Method string `json:"method"`
		Params any    `json:"params,omitempty"`
	}{method, params})
}

// quietMethods are notifications crw has no use for: streaming deltas and status noise.
var quietMethods = []string{
	"item/agentMessage/delta", "item/reasoning/summaryTextDelta", "item/reasoning/summaryPartAdded",
	"item/reasoning/textDelta", "item/commandExecution/outputDelta", "item/fileChange/outputDelta",
	"item/plan/delta", "command/exec/outputDelta", "process/outputDelta", "account/rateLimits/updated",
	"thread/status/changed", "deprecationNotice", "configWarning", "remoteControl/status/changed",
}

// Initialize opens the session: initialize, then the initialized notification.
func (c *Client) Initialize(ctx context.Context, name, version string) error {
	params := map[string]any{
		"clientInfo":   map[string]string{"name": name, "title": name, "version": version},
		"capabilities": map[string]any{"optOutNotificationMethods": append(slices.Clip(quietMethods), c.optOut...)},
	}
	if err := c.Call(ctx, "initialize", params, nil); err != nil {
		return err
	}
	return c.Notify("initialized", nil)
}

// StartThread runs thread/start.
func (c *Client) StartThread(ctx context.Context, p ThreadParams) (*ThreadResponse, error) {
	var r ThreadResponse
	return &r, c.Call(ctx, "thread/start", p, &r)
}

// ResumeThread runs thread/resume without the thread's turns: it loads a stored thread into
// this app server with the settings given.
func (c *Client) ResumeThread(ctx context.Context, threadID string, p ThreadParams) (*ThreadResponse, error) {
	params := struct {
		ThreadID string `json:"threadId"`
		ThreadParams
		ExcludeTurns bool `json:"excludeTurns"`
	}{threadID, p, true}
	var r ThreadResponse
	return &r, c.Call(ctx, "thread/resume", params, &r)
}

// ForkThread runs thread/fork: a new thread with the turns of threadID up to lastTurnID
// (all of them when "").
func (c *Client) ForkThread(ctx context.Context, threadID, lastTurnID string, p ThreadParams) (*ThreadResponse, error) {
	params := struct {
		ThreadID string `json:"threadId"`
		ThreadParams
		LastTurnID   string `json:"lastTurnId,omitempty"`
		ExcludeTurns bool   `json:"excludeTurns"`
	}{threadID, p, lastTurnID, true}
	var r ThreadResponse
	return &r, c.Call(ctx, "thread/fork", params, &r)
}

// StartTurn runs turn/start with one text input and, when schema is not nil, the turn's
// outputSchema; the turn is tracked for WaitTurn.
func (c *Client) StartTurn(ctx context.Context, threadID, text string, schema json.RawMessage) (string, error) {
	params := struct {
		ThreadID     string           `json:"threadId"`
		Input        []map[string]any `json:"input"`
		OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	}{threadID, []map[string]any{{"type": "text", "text": text}}, schema}
	var r struct {
		Turn Turn `json:"turn"`
	}
	if err := c.Call(ctx, "turn/start", params, &r); err != nil {
		return "", err
	}
	c.Track(r.Turn.ID)
	return r.Turn.ID, nil
}

// InterruptTurn runs turn/interrupt; the turn ends soon after with status interrupted.
func (c *Client) InterruptTurn(ctx context.Context, threadID, turnID string) error {
	return c.Call(ctx, "turn/interrupt", map[string]string{"threadId": threadID, "turnId": turnID}, nil)
}

// Unsubscribe runs thread/unsubscribe and, when that leaves the thread without subscribers,
// waits until the app server has closed it (thread/closed): it cannot be resumed before.
func (c *Client) Unsubscribe(ctx context.Context, threadID string) error {
	ch := make(chan struct{})
	c.mu.Lock()
	c.closing[threadID] = ch
	c.mu.Unlock()
	var r struct {
		Status string `json:"status"`
	}
	err := c.Call(ctx, "thread/unsubscribe", map[string]string{"threadId": threadID}, &r)
	if err == nil && r.Status == "unsubscribed" {
		select {
		case <-ch:
			return nil
		case <-c.done:
			err = c.Err()
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	c.mu.Lock()
	if c.closing[threadID] == ch {
		delete(c.closing, threadID)
	}
	c.mu.Unlock()
	return err
}

// Turns lists a thread's turns with all their items, newest first; it stops early once stop
// returns true for a turn. thread/turns/list refuses a thread whose first turn is not yet in
// its rollout; thread/read, which reads the live thread, answers then.
func (c *Client) Turns(ctx context.Context, threadID string, stop func(*Turn) bool) ([]Turn, error) {
	var all []Turn
	cursor := ""
	for page := 0; ; page++ {
		if page == maxTurnPages {
			return nil, fmt.Errorf("appserver: thread %s: the host gave more than %d pages of turns", threadID, maxTurnPages)
		}
		params := map[string]any{"threadId": threadID, "itemsView": "full", "limit": 50}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var r struct {
			Data       []Turn `json:"data"`
			NextCursor string `json:"nextCursor"`
		}
		if err := c.Call(ctx, "thread/turns/list", params, &r); err != nil {
			var rpc *RPCError
			if cursor != "" || !errors.As(err, &rpc) {
				return nil, err
			}
			var read struct {
				Thread struct {
					Turns []Turn `json:"turns"`
				} `json:"thread"`
			}
			if err := c.Call(ctx, "thread/read", map[string]any{"threadId": threadID, "includeTurns": true}, &read); err != nil {
				return nil, err
			}
			r.Data = read.Thread.Turns
			slices.Reverse(r.Data)
		}
		for i := range r.Data {
			all = append(all, r.Data[i])
			if stop != nil && stop(&r.Data[i]) {
				return all, nil
			}
		}
		if r.NextCursor == "" || len(r.Data) == 0 {
			return all, nil
		}
		cursor = r.NextCursor
	}
}
