package codexhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/coder/websocket"

	"github.com/crw-dev/crw/engine/backend/codex"
)

// maxSendHeader is where Codex's upgrade answer names the largest message it takes; past it the
// server closes the socket, so a larger request is refused here instead.
const maxSendHeader = "x-codex-websocket-max-unfragmented-message-bytes"

// defaultMaxSend is Codex 0.169.0's value of maxSendHeader, for a server that sends none.
const defaultMaxSend = 16 << 20

// sunPathMax is the longest path a unix socket address takes (108 bytes with its NUL on Linux).
const sunPathMax = 107

// Dial connects to an owner's app server listening on a unix socket: addr is
// "unix:///abs/app.sock" or the absolute path itself. It upgrades the connection to a
// WebSocket and opens a session (initialize) within ctx.
func Dial(ctx context.Context, addr string, opts ...Option) (*Host, error) {
	o := config(opts)
	conn, err := dialWS(ctx, addr, o)
	if err != nil {
		return nil, err
	}
	client := codex.NewConnClient(conn, clientOptions(o))
	h := &Host{client: client, close: func() error {
		conn.close()
		<-client.Done() // the read under way ends at once: later requests are ErrClosed
		return nil
	}}
	if err := client.Initialize(ctx, "crw", codex.Version()); err != nil {
		h.Close()
		return nil, fmt.Errorf("codexhost: %s: initialize: %w", addr, err)
	}
	return h, nil
}

// Client connects to an app server's socket as a client of its own (the owner's side, in tests
// that play a user's Codex), initialized under name. close ends the connection.
func Client(ctx context.Context, addr, name string, opts ...Option) (client *codex.Client, close func(), err error) {
	o := config(opts)
	conn, err := dialWS(ctx, addr, o)
	if err != nil {
		return nil, nil, err
	}
	client = codex.NewConnClient(conn, codex.ClientOptions{Timeout: o.timeout})
	close = func() {
		conn.close()
		<-client.Done()
	}
	if err := client.Initialize(ctx, name, codex.Version()); err != nil {
		close()
		return nil, nil, fmt.Errorf("codexhost: %s: initialize: %w", addr, err)
	}
	return client, close, nil
}

// socketPath is the path of a unix:// address. Codex makes the path it listens on a symlink to a
// short path of its own; a path too long for a socket address is dialled through that link.
func socketPath(addr string) (string, error) {
	path := strings.TrimPrefix(addr, "unix://")
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("codexhost: %q is not a unix:// address or an absolute socket path", addr)
	}
	if len(path) > sunPathMax {
		if target, err := filepath.EvalSymlinks(path); err == nil {
			path = target
		}
	}
	return path, nil
}

func dialWS(ctx context.Context, addr string, o options) (*wsConn, error) {
	path, err := socketPath(addr)
	if err != nil {
		return nil, err
	}
	// A transport of its own: no proxy from the environment, every connection to the socket.
	transport := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	c, resp, err := websocket.Dial(ctx, "ws://localhost/", &websocket.DialOptions{HTTPClient: &http.Client{Transport: transport}})
	if err != nil {
		return nil, fmt.Errorf("codexhost: %s: %w", addr, err)
	}
	c.SetReadLimit(o.readLimit)
	w := &wsConn{c: c, maxSend: defaultMaxSend, readLimit: o.readLimit}
	if n, err := strconv.Atoi(resp.Header.Get(maxSendHeader)); err == nil && n > 0 {
		w.maxSend = n
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	return w, nil
}

// wsConn is an codex.Conn over a WebSocket: one JSON-RPC message per text frame.
type wsConn struct {
	c         *websocket.Conn
	maxSend   int
	readLimit int64
	ctx       context.Context // ends the read under way when the Host is closed
	cancel    context.CancelFunc
	once      sync.Once
}

func (w *wsConn) Read() ([]byte, error) {
	_, msg, err := w.c.Read(w.ctx)
	if err == nil {
		return msg, nil
	}
	switch {
	case w.ctx.Err() != nil:
		return nil, errors.New("closed by crw")
	case errors.Is(err, websocket.ErrMessageTooBig):
		return nil, fmt.Errorf("the host sent a message longer than %d bytes", w.readLimit)
	case websocket.CloseStatus(err) != -1:
		return nil, fmt.Errorf("the host closed the WebSocket: %v", err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return nil, errors.New("the host closed the connection")
	}
	return nil, err
}

func (w *wsConn) Write(ctx context.Context, msg []byte) error {
	if len(msg) > w.maxSend {
		return fmt.Errorf("a request of %d bytes, over the host's limit of %d", len(msg), w.maxSend)
	}
	return w.c.Write(ctx, websocket.MessageText, msg)
}

// close ends the connection at once: a reader owes the host no close handshake, which would
// wait up to ten seconds on a host that does not answer it; the host sees the socket close.
func (w *wsConn) close() error {
	w.once.Do(func() {
		w.cancel()
		w.c.CloseNow()
	})
	return nil
}
