package codexhost_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// fakeHost is an app server on a unix socket in a test's temp dir that speaks JSON-RPC over a
// WebSocket as Codex does: it answers initialize, and hands every other request to serve. With
// no serve it answers nothing.
type fakeHost struct {
	sock  string
	maxIn string // the largest message it says it takes
	serve func(c *websocket.Conn, r request)

	mu       sync.Mutex
	requests []request // after initialize and initialized
	conns    []*websocket.Conn
}

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func newFakeHost(t *testing.T, serve func(c *websocket.Conn, r request)) *fakeHost {
	return newFakeHostTaking(t, "16777216", serve)
}

// newFakeHostTaking is a fakeHost that advertises maxIn as the largest message it takes.
func newFakeHostTaking(t *testing.T, maxIn string, serve func(c *websocket.Conn, r request)) *fakeHost {
	f := &fakeHost{sock: filepath.Join(t.TempDir(), "app.sock"), maxIn: maxIn, serve: serve}
	l, err := net.Listen("unix", f.sock)
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(f.handle)}
	go srv.Serve(l)
	t.Cleanup(func() {
		srv.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, c := range f.conns { // hijacked: the server's Close leaves them open
			c.CloseNow()
		}
	})
	return f
}

func (f *fakeHost) handle(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("x-codex-websocket-max-unfragmented-message-bytes", f.maxIn)
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	c.SetReadLimit(16 << 20)
	f.mu.Lock()
	f.conns = append(f.conns, c)
	f.mu.Unlock()
	for {
		_, data, err := c.Read(context.Background())
		if err != nil {
			return
		}
		var req request
		if json.Unmarshal(data, &req) != nil {
			continue
		}
		switch {
		case f.serve == nil:
		case req.Method == "initialize":
			reply(c, req.ID, `{"userAgent":"crw/0.169.0","codexHome":"/home/u/.codex","platformFamily":"unix","platformOs":"linux"}`)
		case req.Method == "initialized":
		default:
			f.mu.Lock()
			f.requests = append(f.requests, req)
			f.mu.Unlock()
			f.serve(c, req)
		}
	}
}

// got is the requests the host was sent, as method and params.
func (f *fakeHost) got() [][2]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out [][2]string
	for _, r := range f.requests {
		out = append(out, [2]string{r.Method, string(r.Params)})
	}
	return out
}

func send(c *websocket.Conn, msg string) {
	c.Write(context.Background(), websocket.MessageText, []byte(msg))
}

func reply(c *websocket.Conn, id json.RawMessage, result string) {
	send(c, `{"id":`+string(id)+`,"result":`+result+`}`)
}

func fail(c *websocket.Conn, id json.RawMessage, code int, message string) {
	msg, _ := json.Marshal(map[string]any{"id": id, "error": map[string]any{"code": code, "message": message}})
	send(c, string(msg))
}
