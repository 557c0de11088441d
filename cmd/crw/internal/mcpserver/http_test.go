package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
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

const token = "0123456789abcdef-the-token"

// header adds headers to every request of a client.
type header struct {
	set  map[string]string
	next http.RoundTripper
}

func (h header) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.set {
		r.Header.Set(k, v)
	}
	return h.next.RoundTrip(r)
}

func httpServer(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	state := filepath.Join(t.TempDir(), "state")
	srv, err := mcpserver.New(mcpserver.Options{State: state, Backends: backends()})
	require.NoError(t, err)
	opts := mcpserver.HTTPOptions{Token: token, Origins: []string{"https://app.example"}}
	hs := httptest.NewServer(mcpserver.Guard(srv.HTTPHandler(opts), opts))
	t.Cleanup(hs.Close)
	return hs, state
}

// post sends an initialize request with the headers given and returns the answer.
func post(t *testing.T, url string, headers map[string]string) (int, http.Header, map[string]any) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return res.StatusCode, res.Header, out
}

// TestHTTPNeedsTheToken: no token, another token, a token in another scheme: 401 with
// invalid_authority and nothing of the token; the right one is served.
func TestHTTPNeedsTheToken(t *testing.T) {
	t.Parallel()
	hs, _ := httpServer(t)
	for name, h := range map[string]map[string]string{
		"none":          nil,
		"wrong":         {"Authorization": "Bearer " + token + "x"},
		"empty":         {"Authorization": "Bearer "},
		"not a bearer":  {"Authorization": "Basic " + token},
		"prefix of it":  {"Authorization": "Bearer " + token[:10]},
		"case of token": {"Authorization": "Bearer " + strings.ToUpper(token)},
	} {
		t.Run(name, func(t *testing.T) {
			status, header, body := post(t, hs.URL, h)
			assert.Equal(t, http.StatusUnauthorized, status)
			assert.Contains(t, header.Get("WWW-Authenticate"), "Bearer")
			e, _ := body["error"].(map[string]any)
			require.NotNil(t, e, "%v", body)
			assert.Equal(t, "invalid_authority", e["code"])
			assert.Equal(t, "The presented authorization is invalid for the request.", e["message"])
			assert.Equal(t, "Reauthorize the client; do not reuse or forward the rejected token.", e["safe_response"])
			data, _ := json.Marshal(body)
			assert.NotContains(t, string(data), token[:10], "the answer says nothing of the token")
		})
	}
	status, _, body := post(t, hs.URL, map[string]string{"Authorization": "Bearer " + token})
	assert.Equal(t, http.StatusOK, status, "%v", body)
	status, _, body = post(t, hs.URL, map[string]string{"Authorization": "bearer " + token})
	assert.Equal(t, http.StatusOK, status, "the scheme's name is case-insensitive: %v", body)
}

// TestHTTPRefusesForeignOrigins: a request from a page of another origin is refused 403 even
// with the token (DNS rebinding); loopback origins and the allowed one are served.
func TestHTTPRefusesForeignOrigins(t *testing.T) {
	t.Parallel()
	hs, _ := httpServer(t)
	auth := "Bearer " + token
	for _, origin := range []string{"http://evil.example", "http://127.0.0.1.evil.example", "null", "https://app.example:8443", "http://10.0.0.1:8080"} {
		status, _, body := post(t, hs.URL, map[string]string{"Authorization": auth, "Origin": origin})
		assert.Equal(t, http.StatusForbidden, status, origin)
		e, _ := body["error"].(map[string]any)
		require.NotNil(t, e, "%s: %v", origin, body)
		assert.Equal(t, "invalid_authority", e["code"], origin)
	}
	for _, origin := range []string{"http://localhost:3000", "http://127.0.0.1:8080", "http://[::1]", "https://app.example"} {
		status, _, body := post(t, hs.URL, map[string]string{"Authorization": auth, "Origin": origin})
		assert.Equal(t, http.StatusOK, status, "%s: %v", origin, body)
	}
}

// TestHTTPServesTheSDKClient: the SDK's client with the token lists the tools and calls them.
func TestHTTPServesTheSDKClient(t *testing.T) {
	t.Parallel()
	hs, _ := httpServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hc := &http.Client{Transport: header{set: map[string]string{"Authorization": "Bearer " + token}, next: http.DefaultTransport}}
	c := mcptest.Connect(t, ctx, "http-client", &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: hc, MaxRetries: -1})
	assert.Equal(t, mcptest.Tools, c.Listed)
	c.CheckSchemas()
	a := c.Call(ctx, "audit", map[string]any{})
	assert.False(t, a.IsError, a.Text)
	wrong := &http.Client{Transport: header{set: map[string]string{"Authorization": "Bearer nope-nope-nope-nope"}, next: http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "x", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: wrong, MaxRetries: -1}, nil)
	if !assert.Error(t, err, "a client with another token is not served") {
		cs.Close()
	}
}

func TestListenIsLoopbackUnlessAllowed(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"127.0.0.1:0", "127.0.0.2:8765", "[::1]:0", "localhost:8765"} {
		assert.NoError(t, mcpserver.CheckListen(addr, false), addr)
	}
	for _, addr := range []string{"0.0.0.0:8765", ":8765", "[::]:0", "192.168.1.2:80", "example.com:80"} {
		err := mcpserver.CheckListen(addr, false)
		require.Error(t, err, addr)
		assert.Contains(t, err.Error(), "--allow-remote", addr)
		assert.NoError(t, mcpserver.CheckListen(addr, true), addr)
	}
	assert.ErrorContains(t, mcpserver.CheckListen("no port", true), "invalid_request")
}
