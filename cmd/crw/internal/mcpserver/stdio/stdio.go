// Package stdio is crw mcp's transport on its standard input and output: newline-delimited
// JSON as the SDK's, which answers what the SDK would end its session on and holds the end of
// the input back until every request read before it is answered.
package stdio

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/wire"
	"github.com/crw-dev/crw/errs"
)

// maxLine bounds a message on stdio, as the SDK's transport does.
const maxLine = mcp.DefaultMaxLineLength

// maxDepth is how deep the SDK lets a message nest; a deeper one would end its session.
const maxDepth = 1000

// New is the transport on the server's standard input and output, newline-delimited JSON as
// the SDK's. Two things are its own. A message the SDK would end the session on (not JSON,
// longer than 16 MiB, nested deeper than 1,000 levels) is answered here and passed over: a tool
// call with a tool error (invalid_request), another request with a JSON-RPC error. And the
// end of the input is held back until every request read before it has been answered (or ctx
// ends): the SDK closes the session as soon as its input ends, dropping the answers still
// being worked out, so a client that writes its requests and closes its end would get none,
// and a mutation under way would be cut short. payloads names each tool's answer member, by the
// tool's name.
func New(ctx context.Context, in io.Reader, out io.Writer, payloads map[string]string) mcp.Transport {
	p := &pending{ids: map[string]bool{}, changed: make(chan struct{})}
	w := &answerWriter{w: out, p: p}
	return &mcp.IOTransport{Reader: &stdinReader{ctx: ctx, r: in, p: p, w: w, payloads: payloads}, Writer: w, MaxLineLength: -1}
}

// pending are the ids of requests read and not answered yet.
type pending struct {
	mu      sync.Mutex
	ids     map[string]bool
	changed chan struct{} // closed and made anew at each change
}

func (p *pending) update(fn func(map[string]bool)) {
	p.mu.Lock()
	fn(p.ids)
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// wait waits until no request is pending, or ctx ends.
func (p *pending) wait(ctx context.Context) {
	for {
		p.mu.Lock()
		n, changed := len(p.ids), p.changed
		p.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// message is what a JSON-RPC message says of the request it opens or closes.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

func messages(line []byte) []message {
	var batch []message
	if len(line) > 0 && line[0] == '[' {
		_ = json.Unmarshal(line, &batch)
		return batch
	}
	var m message
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	return []message{m}
}

// stdinReader gives the SDK the input a whole line at a time, each one checked.
type stdinReader struct {
	ctx      context.Context
	r        io.Reader
	p        *pending
	w        *answerWriter
	payloads map[string]string // tool → its answer's member

	line  []byte // the line read so far
	over  bool   // it is too long: passed over up to its end
	ready []byte // checked lines for the SDK
	eof   bool
	chunk [64 << 10]byte
}

func (d *stdinReader) Read(b []byte) (int, error) {
	for len(d.ready) == 0 {
		if d.eof {
			d.p.wait(d.ctx)
			return 0, io.EOF
		}
		n, err := d.r.Read(d.chunk[:])
		d.feed(d.chunk[:n])
		if err == io.EOF {
			d.eof = true
			if len(d.line) > 0 || d.over {
				d.end()
			}
		} else if err != nil {
			return 0, err
		}
	}
	n := copy(b, d.ready)
	d.ready = d.ready[n:]
	return n, nil
}

func (d *stdinReader) feed(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			d.add(p)
			return
		}
		d.add(p[:i])
		d.end()
		p = p[i+1:]
	}
}

func (d *stdinReader) add(p []byte) {
	if d.over {
		return
	}
	if len(d.line)+len(p) > maxLine {
		d.over, d.line = true, nil
		return
	}
	d.line = append(d.line, p...)
}

// end checks a whole line: it goes to the SDK, or is answered here.
func (d *stdinReader) end() {
	line := bytes.TrimSpace(d.line)
	over := d.over
	d.line, d.over = d.line[:0], false
	switch {
	case over:
		d.w.inject(rpcError(nil, -32600, "Invalid Request: a message longer than 16 MiB"))
	case len(line) == 0:
	case !json.Valid(line):
		d.w.inject(rpcError(nil, -32700, "Parse error: the message is not JSON"))
	case tooDeep(line):
		for _, m := range messages(line) {
			d.refuseDeep(m)
		}
		if line[0] == '[' || len(messages(line)) == 0 {
			d.w.inject(rpcError(nil, -32600, "Invalid Request: nested deeper than 1000 levels"))
		}
	case line[0] == '[':
		d.refuseBatch(line)
	case d.undecodable(line):
	case d.unanswerableID(line):
	default:
		for _, m := range messages(line) {
			if m.Method == "notifications/cancelled" && len(m.Params.RequestID) > 0 {
				if key, ok := idKey(m.Params.RequestID); ok {
					d.p.update(func(ids map[string]bool) { delete(ids, key) })
				}
			}
			// A message with a method and an id is a request, a cancel written with an id too:
			// the SDK answers it, and the session's end waits for that answer.
			if m.Method != "" {
				if key, ok := idKey(m.ID); ok {
					d.p.update(func(ids map[string]bool) { ids[key] = true })
				}
			}
		}
		d.ready = append(append(d.ready, line...), '\n')
	}
}

// unanswerableID answers a request whose id could not be matched to its answer, and says
// whether it did: a number with a fraction or past 2^53 (the SDK reads ids as 64-bit integers,
// so 1.5 would be answered as 1), or an id a request read before it and not answered yet uses
// (the SDK would drop it: its client would wait for ever).
func (d *stdinReader) unanswerableID(line []byte) bool {
	ms := messages(line)
	if len(ms) != 1 || ms[0].Method == "" {
		return false
	}
	raw := ms[0].ID
	key, ok := idKey(raw)
	if !ok {
		return false // a notification
	}
	var why string
	if raw[0] != '"' && !safeInteger(raw) {
		why = "Invalid Request: a numeric id must be an integer of at most 2^53 (as JSON-RPC asks, it has no fraction)"
	} else {
		d.p.mu.Lock()
		busy := d.p.ids[key]
		d.p.mu.Unlock()
		if busy {
			why = "Invalid Request: the id is that of a request not answered yet; give each request in flight an id of its own"
		}
	}
	if why == "" {
		return false
	}
	d.w.inject(rpcError(raw, -32600, why))
	return true
}

// safeInteger says whether a JSON number is an integer a float64 holds exactly.
func safeInteger(raw json.RawMessage) bool {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil && n <= 1<<53 && n >= -(1<<53)
}

// refuseBatch answers each request of a JSON-RPC batch with an error: the protocol versions
// crw serves have no batches, and the SDK would end the session on one, leaving the requests
// read before it unanswered.
func (d *stdinReader) refuseBatch(line []byte) {
	const why = "Invalid Request: JSON-RPC batches are not supported; send one message a line"
	answered := false
	for _, m := range messages(line) {
		if _, ok := idKey(m.ID); ok && m.Method != "" {
			d.w.inject(rpcError(m.ID, -32600, why))
			answered = true
		}
	}
	if !answered {
		d.w.inject(rpcError(nil, -32600, why))
	}
}

// undecodable answers a line the SDK cannot decode as a JSON-RPC message (no "jsonrpc":
// "2.0", an id that is neither a number nor a string, a message that is neither a request nor
// a response), which would end its session, and says whether it did.
func (d *stdinReader) undecodable(line []byte) bool {
	_, err := jsonrpc.DecodeMessage(line)
	if err == nil {
		return false
	}
	var id json.RawMessage
	if ms := messages(line); len(ms) == 1 && ms[0].Method != "" {
		if _, ok := idKey(ms[0].ID); ok {
			id = ms[0].ID
		}
	}
	d.w.inject(rpcError(id, -32600, "Invalid Request: "+wire.Clean(err.Error(), 300)))
	return true
}

// idValue is a raw id as the SDK decodes it.
func idValue(raw json.RawMessage) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return struct{}{}
	}
	return v
}

// refuseDeep answers a request nested too deep for the SDK: a tool call with a tool error.
func (d *stdinReader) refuseDeep(m message) {
	if len(m.ID) == 0 || m.Method == "" {
		return // a notification: nothing to answer
	}
	payload, isTool := d.payloads[m.Params.Name]
	if m.Method != "tools/call" || !isTool {
		d.w.inject(rpcError(m.ID, -32600, "Invalid Request: nested deeper than 1000 levels"))
		return
	}
	e := errs.New(errs.InvalidRequest, "arguments: nested deeper than %d levels", maxDepth)
	content, _ := json.Marshal(map[string]any{payload: nil, "error": wire.Error(e, nil)})
	res, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": string(content)}},
		"structuredContent": json.RawMessage(content), "isError": true})
	d.w.inject(rpcResult(m.ID, res))
}

func (d *stdinReader) Close() error {
	if c, ok := d.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// tooDeep tells whether JSON nests deeper than maxDepth.
func tooDeep(data []byte) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range data {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			if depth++; depth > maxDepth {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

func rpcError(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	return data
}

func rpcResult(id json.RawMessage, result json.RawMessage) []byte {
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	return data
}

// answerWriter writes the SDK's messages, and the ones the reader answers itself, one whole
// message a write, and notes the requests answered.
type answerWriter struct {
	mu    sync.Mutex
	w     io.Writer
	p     *pending
	line  []byte
	stuck bool // a write failed: nothing more reaches the client
}

func (a *answerWriter) Write(b []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n, err := a.w.Write(b)
	a.line = append(a.line, b[:n]...)
	for {
		i := bytes.IndexByte(a.line, '\n')
		if i < 0 {
			break
		}
		for _, m := range messages(bytes.TrimSpace(a.line[:i])) {
			if key, ok := idKey(m.ID); ok && m.Method == "" {
				a.p.update(func(ids map[string]bool) { delete(ids, key) })
			}
		}
		a.line = a.line[i+1:]
	}
	if err != nil && !a.stuck {
		a.stuck = true
		a.p.update(func(ids map[string]bool) { clear(ids) }) // wait for no answer
	}
	return n, err
}

// inject writes a message of the reader's own.
func (a *answerWriter) inject(msg []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = a.w.Write(append(msg, '\n'))
}

func (a *answerWriter) Close() error { return nil }

// idKey is a request id as a map key, as the SDK reads it (1.5 is 1, "1" a string): false
// for a message without one (null, absent: a notification) or with one it cannot read.
func idKey(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	id, err := jsonrpc.MakeID(idValue(raw))
	if err != nil || !id.IsValid() {
		return "", false
	}
	return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()), true
}
