package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/mcptest"
)

// rssOf is a process's resident set, in bytes, from /proc.
func rssOf(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestMCPOverHTTPUnderAbuse: a real crw mcp --listen, its sessions idle for 2 s at most. 1,000
// sessions are opened and abandoned, then 5,000 connections are opened that never send a
// byte; the owner's client, calling a tool all along, is served every time. Once the
// abandoned sessions have ended the server's resident memory comes back within 20% of what it
// was before them (not under the race detector, whose own memory only grows: .ci/run runs this
// test without it too).
func TestMCPOverHTTPUnderAbuse(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test of a minute: not with -short")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("the resident memory is read from /proc")
	}
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	idle := 5000
	if lim.Cur < 12000 {
		idle = int(lim.Cur) / 3 // this test's own descriptors are bounded too
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const token = "load-test-token-0123456789"
	cmd := mcpCommand(t, filepath.Join(t.TempDir(), "state"), "--listen", "127.0.0.1:0", "--session-idle", "2s")
	cmd.Env = append(cmd.Env, "CRW_MCP_TOKEN="+token)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	br := bufio.NewReader(stderr)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "crw mcp: serving on ")
	require.True(t, ok, line)
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/")

	owner := mcptest.Connect(t, ctx, "owner", &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer(token)}, MaxRetries: -1})
	require.False(t, owner.Call(ctx, "audit", map[string]any{}).IsError)
	// The start is the server once it has served each kind of request once: what the load
	// adds is measured, not the code it pages in.
	warm := abandonSessions(t, ctx, url, token, 8)
	require.Equal(t, 8, warm)
	for range 8 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		c.Close()
	}
	res, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	before := rssOf(t, cmd.Process.Pid)

	// The owner calls a tool all along; every call must be answered.
	stop := make(chan struct{})
	var slowest time.Duration
	var served, failed int
	var ownerDone sync.WaitGroup
	ownerDone.Add(1)
	go func() {
		defer ownerDone.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			a := owner.Call(ctx, "audit", map[string]any{})
			slowest = max(slowest, time.Since(start))
			if a.IsError {
				failed++
			} else {
				served++
			}
		}
	}()

	// 1,000 sessions, initialized and abandoned.
	assert.Equal(t, 1000, abandonSessions(t, ctx, url, token, 1000), "every session opened")
	afterSessions := rssOf(t, cmd.Process.Pid)

	// 5,000 connections that never send a byte.
	var conns []net.Conn
	for range idle {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		conns = append(conns, c)
	}
	// The owner is still served with them all open.
	a := owner.Call(ctx, "audit", map[string]any{})
	assert.False(t, a.IsError, a.Text)
	for _, c := range conns {
		c.Close()
	}
	close(stop)
	ownerDone.Wait()
	assert.Zero(t, failed, "the owner's calls all answered")
	assert.Greater(t, served, 1)

	if raceDetector {
		t.Logf("owner: %d calls served, slowest %s, with %d idle connections; the memory is not checked under the race detector, which keeps what it saw",
			served, slowest.Round(time.Millisecond), idle)
		return
	}
	// The abandoned sessions end after 2 s idle; the memory they held goes back.
	var after int64
	for deadline := time.Now().Add(2 * time.Minute); ; {
		after = rssOf(t, cmd.Process.Pid)
		if after <= before*12/10 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("owner: %d calls served, slowest %s; %d idle connections; RSS %d MiB at start, %d MiB with 1,000 sessions, %d MiB after they ended",
		served, slowest.Round(time.Millisecond), idle, before>>20, afterSessions>>20, after>>20)
	assert.LessOrEqual(t, after, before*12/10, "the server's memory comes back within 20%% once the sessions ended")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
}

// abandonSessions opens n MCP sessions, 16 at a time, and leaves them; it returns how many
// were opened.
func abandonSessions(t *testing.T, ctx context.Context, url, token string, n int) int {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	todo := make(chan int, n)
	for i := range n {
		todo <- i
	}
	close(todo)
	var opened atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range todo {
				body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"abandoned","version":"1"}}}`
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				res, err := client.Do(req)
				if err != nil {
					t.Logf("initialize: %v", err)
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode == http.StatusOK && res.Header.Get("Mcp-Session-Id") != "" {
					opened.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return int(opened.Load())
}
