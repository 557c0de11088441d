package mcp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver"
)

func TestNewCmdMCP(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdMCP)
	require.NoError(t, err)
	assert.Empty(t, opts.Listen, "stdio")
	assert.False(t, opts.HTTPFlagSet)
	assert.Equal(t, mcpserver.HTTPOptions{MaxConnections: mcpserver.DefaultMaxConnections, MaxClientConnections: mcpserver.DefaultMaxClientConnections,
		MaxSessions: mcpserver.DefaultMaxSessions, SessionIdle: mcpserver.DefaultSessionIdle}, opts.Limits)
	assert.Same(t, e.Factory.Backends, opts.Backends)

	opts, err = cmdtest.Parse(t, e, NewCmdMCP, "--listen", "127.0.0.1:8765", "--token-file", "tok", "--allow-remote",
		"--allow-origin", "https://a.example", "--allow-origin", "https://b.example", "--max-connections", "9",
		"--max-client-connections", "3", "--max-sessions", "5", "--session-idle", "90s")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:8765", opts.Listen)
	assert.Equal(t, "tok", opts.TokenFile)
	assert.True(t, opts.AllowRemote)
	assert.Equal(t, []string{"https://a.example", "https://b.example"}, opts.Origins)
	assert.Equal(t, mcpserver.HTTPOptions{MaxConnections: 9, MaxClientConnections: 3, MaxSessions: 5, SessionIdle: 90 * time.Second}, opts.Limits)
	assert.True(t, opts.HTTPFlagSet)

	for _, flag := range [][]string{{"--token-file", "t"}, {"--allow-remote"}, {"--max-sessions", "2"}, {"--session-idle", "1m"}} {
		opts, err = cmdtest.Parse(t, e, NewCmdMCP, flag...)
		require.NoError(t, err)
		assert.True(t, opts.HTTPFlagSet, "%s goes with --listen only", flag[0])
	}
}

func TestMCPRefusesHTTPFlagsWithoutListen(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdMCP, "--allow-remote")
	require.NoError(t, err)
	assert.EqualError(t, runMCP(opts), "invalid_request: --token-file, --allow-remote, --allow-origin, --max-connections, --max-client-connections, --max-sessions and --session-idle go with --listen")
}
