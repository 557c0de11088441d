package mcpserver_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver"
	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/mcptest"
)

// limitedServer serves the HTTP transport with o's limits on a loopback port of its own.
func limitedServer(t *testing.T, o mcpserver.HTTPOptions) (*mcpserver.HTTPServer, string) {
	t.Helper()
	srv, err := mcpserver.New(mcpserver.Options{State: filepath.Join(t.TempDir(), "state"), Backends: backends()})
	require.NoError(t, err)
	o.Token = token
	hs := srv.HTTP(o)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = hs.Serve(ctx, l) }()
	t.Cleanup(func() { cancel(); <-done })
	return hs, "http://" + l.Addr().String()
}

func ownerClient(t *testing.T, ctx context.Context, url string) *mcptest.Client {
	hc := &http.Client{Transport: header{set: map[string]string{"Authorization": "Bearer " + token}, next: http.DefaultTransport}}
	return mcptest.Connect(t, ctx, "owner", &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1})
}

// TestAClientWithoutTheTokenKeepsNoConnection: the 401 closes the connection it came on,
// keep-alive or not.
func TestAClientWithoutTheTokenKeepsNoConnection(t *testing.T) {
	t.Parallel()
	_, url := limitedServer(t, mcpserver.HTTPOptions{})
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}")
	require.NoError(t, err)
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute)))
	_, err = br.ReadByte()
	assert.ErrorIs(t, err, io.EOF, "the server closed the connection after its 401")
}

// TestSilentConnectionsGiveWayToTheOwner: with room for 8 connections, 4 of one address, 40
// connections that never send a byte are held, each taking the place of an older one; the
// owner's client, which shows the token, is served throughout and its connection is never the
// one that gives way.
func TestSilentConnectionsGiveWayToTheOwner(t *testing.T) {
	t.Parallel()
	hs, url := limitedServer(t, mcpserver.HTTPOptions{MaxConnections: 8, MaxClientConnections: 4})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owner := ownerClient(t, ctx, url)
	var silent []net.Conn
	defer func() {
		for _, c := range silent {
			c.Close()
		}
	}()
	for i := range 40 {
		c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
		require.NoError(t, err)
		silent = append(silent, c)
		if i%10 == 9 {
			a := owner.Call(ctx, "audit", map[string]any{})
			require.False(t, a.IsError, "after %d silent connections: %s", i+1, a.Text)
		}
	}
	assert.LessOrEqual(t, hs.Connections(), 4, "one address holds at most its 4")
	// The oldest silent connections were closed by the server.
	require.NoError(t, silent[0].SetReadDeadline(time.Now().Add(time.Minute)))
	_, err := silent[0].Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF, "the first silent connection gave way")
	a := owner.Call(ctx, "audit", map[string]any{})
	assert.False(t, a.IsError, a.Text)
}

// TestSessionsAreCappedAndEndWhenIdle: with room for 2 sessions, a third initialize is refused
// 503 capability_unavailable (session_limit); once the two are idle for 5 s they end and a new
// one is served. (The three requests must come within those 5 s, on a loaded machine too.)
func TestSessionsAreCappedAndEndWhenIdle(t *testing.T) {
	t.Parallel()
	_, url := limitedServer(t, mcpserver.HTTPOptions{MaxSessions: 2, SessionIdle: 5 * time.Second})
	auth := map[string]string{"Authorization": "Bearer " + token}
	for range 2 {
		status, header, body := post(t, url, auth)
		require.Equal(t, http.StatusOK, status, "%v", body)
		require.NotEmpty(t, header.Get("Mcp-Session-Id"))
	}
	status, header, body := post(t, url, auth)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.NotEmpty(t, header.Get("Retry-After"))
	e, _ := body["error"].(map[string]any)
	require.NotNil(t, e, "%v", body)
	assert.Equal(t, "capability_unavailable", e["code"])
	assert.Equal(t, "session_limit", e["diagnostic"].(map[string]any)["reason"])
	assert.Contains(t, e["detail"], "--max-sessions")
	// The idle sessions end by themselves: initialize is served again.
	deadline := time.Now().Add(time.Minute)
	for {
		status, _, _ = post(t, url, auth)
		if status == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	assert.Equal(t, http.StatusOK, status, "a session is served once the idle ones ended")
}
