package mcpserver

import (
	"net/http"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/mcphttp"
	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/tools"
)

// The HTTP transport is package mcphttp; these are its names as crw mcp and its tests use them.

// HTTPOptions guard the streamable HTTP transport (mcphttp.Options).
type HTTPOptions = mcphttp.Options

// HTTPServer serves the streamable HTTP transport behind the guard, within its limits.
type HTTPServer = mcphttp.Server

// The HTTP transport's defaults (docs/mcp.md, "Limits").
const (
	DefaultMaxConnections       = mcphttp.DefaultMaxConnections
	DefaultMaxClientConnections = mcphttp.DefaultMaxClientConnections
	DefaultMaxSessions          = mcphttp.DefaultMaxSessions
	DefaultSessionIdle          = mcphttp.DefaultSessionIdle
)

// Guard wraps h in the transport's guard: the Origin and the bearer token (mcphttp.Guard).
func Guard(h http.Handler, o HTTPOptions) http.Handler { return mcphttp.Guard(h, o) }

// CheckListen refuses an address to listen on that is not loopback unless remote is allowed
// (mcphttp.CheckListen).
func CheckListen(addr string, remote bool) error { return mcphttp.CheckListen(addr, remote) }

// ResumeIn is what the resume tool takes.
type ResumeIn = tools.ResumeIn
