package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// chunked gives its data in pieces of the sizes sizes cycles through (1 to 256 bytes), as a
// pipe a client writes to in partial writes does.
type chunked struct {
	data  []byte
	sizes []byte
	i     int
}

func (c *chunked) Read(b []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 64
	if len(c.sizes) > 0 {
		n = 1 + int(c.sizes[c.i%len(c.sizes)])
		c.i++
	}
	n = min(n, len(b), len(c.data))
	copy(b, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// requestKeys are the ids of the requests a line holds, one entry a request, as JSON-RPC
// reads them: a message with a method and an id that is a string or a number (the SDK reads a
// number as an integer). A notification (no id, or null) is answered by nothing.
func requestKeys(line []byte) []string {
	var msgs []json.RawMessage
	if bytes.HasPrefix(bytes.TrimSpace(line), []byte("[")) {
		if json.Unmarshal(line, &msgs) != nil {
			return nil
		}
	} else {
		msgs = []json.RawMessage{line}
	}
	var keys []string
	for _, raw := range msgs {
		var m struct {
			ID     any             `json:"id"`
			Method json.RawMessage `json:"method"`
		}
		if json.Unmarshal(raw, &m) != nil || len(m.Method) == 0 {
			continue
		}
		var method string
		if json.Unmarshal(m.Method, &method) != nil || method == "" {
			continue
		}
		if key := keyOf(m.ID); key != "" {
			keys = append(keys, key)
		}
	}
	return keys
}

func keyOf(id any) string {
	switch v := id.(type) {
	case string:
		return "s:" + v
	case float64:
		return fmt.Sprintf("n:%d", int64(v))
	}
	return ""
}

// FuzzStdioFraming: whatever lines a client writes (not JSON, batches, messages the SDK cannot
// decode, notifications with ids, responses it never asked for), in whatever pieces, the
// server answers every request it read exactly once, never ends the session on its input, and
// answers the ping written after them all.
func FuzzStdioFraming(f *testing.F) {
	r := newRigOn(f, f.TempDir()+"/state", "fuzz")
	for _, seed := range []string{
		`[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","id":"b2","method":"tools/list"}]`,
		"[]\n[1]\n[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}]",
		`{"jsonrpc":"1.0","id":"v","method":"ping"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"r","result":{}}` + "\n" + `{"jsonrpc":"2.0","id":7}`,
		`{"jsonrpc":"2.0","id":"n","method":"notifications/cancelled","params":{"requestId":"x"}}`,
		"1\n\"x\"\nnull\ntrue\n{}",
		`{"jsonrpc":"2.0","id":"t","method":"tools/call","params":{"name":"effects","arguments":{}}}` + "\n" +
			`[{"jsonrpc":"2.0","id":"t2","method":"tools/call","params":{"name":"effects","arguments":{}}}]`,
		`{"jsonrpc":"2.0","id":"u","method":"nosuch"}` + "\n" + `{"jsonrpc":"2.0","id":"i","method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":7.0,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"name":"effects","arguments":{}}}` + "\n" + `{"jsonrpc":"2.0","id":"d","method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":1.7,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`,
	} {
		f.Add([]byte(seed), []byte{0, 7, 255})
	}
	f.Fuzz(func(t *testing.T, body, sizes []byte) {
		if bytes.Contains(body, []byte(`"start"`)) || bytes.Contains(body, []byte(`"resume"`)) {
			return // starting runs is not what this target exercises
		}
		const initialize = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
		const last = `{"jsonrpc":"2.0","id":"last","method":"ping"}`
		in := initialize + string(body) + "\n" + last + "\n"
		want := map[string]int{}
		for _, line := range strings.Split(in, "\n") {
			for _, k := range requestKeys([]byte(line)) {
				want[k]++
			}
		}
		out := &lockedBuffer{}
		ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
		defer cancel()
		err := r.srv.MCP().Run(ctx, r.srv.Stdio(ctx, &chunked{data: []byte(in), sizes: sizes}, out))
		require.NoError(t, err, "the session ends with its input, not on it")
		require.NoError(t, ctx.Err(), "every request read was answered before the input's end was taken")
		got := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var m struct {
				ID     any             `json:"id"`
				Method json.RawMessage `json:"method"`
			}
			require.NoError(t, json.Unmarshal([]byte(line), &m), "the server writes JSON: %q", line)
			if key := keyOf(m.ID); key != "" && len(m.Method) == 0 {
				got[key]++
			}
		}
		require.Equal(t, want, got, "each request answered once")
	})
}

// lockedBuffer is the server's output, written from its goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
