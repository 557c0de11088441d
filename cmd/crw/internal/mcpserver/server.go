// Package mcpserver is crw mcp: a Model Context Protocol server (the official Go SDK) whose
// tools are a run's lifecycle and the recovery reads, doing what the crw flow commands of the
// same names do through the same code (package ops, the run service). Tool inputs and outputs
// are Go types whose schemas the SDK's jsonschema-go infers; every output schema follows crw's
// strict structured-output rules, and every answer, an error's too, satisfies it. Errors carry
// seed 002's stable code, fixed message, safe response and bounded diagnostic. Mutations are
// idempotent by a request key kept in the state folder, and recorded in its audit.
package mcpserver

import (
	"net/http"
	"path/filepath"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// Name is the server's name, as it introduces itself to clients.
const Name = "crw"

// Options configure a server.
type Options struct {
	// State is the state folder (ops.StateDir).
	State string
	// Backends are the backends of this build.
	Backends *backend.Registry
	// Version is crw's version, as the server introduces itself.
	Version string
}

// Server is crw's MCP server on a state folder.
type Server struct {
	mcp   *mcp.Server
	svc   *engine.Service
	st    *local.Store
	keys  *keys
	tools []tool
	// peakSessions is the most sessions open since the HTTP server last gave memory back.
	peakSessions atomic.Int64
}

// New builds the server and its tools on the state folder.
func New(o Options) (*Server, error) {
	svc, st, err := ops.Open(o.State, o.Backends)
	if err != nil {
		return nil, err
	}
	version := o.Version
	if version == "" {
		version = "dev"
	}
	s := &Server{
		mcp: mcp.NewServer(&mcp.Implementation{Name: Name, Title: "crw: durable agent workflows", Version: version}, &mcp.ServerOptions{
			Instructions: instructions,
		}),
		svc:  svc,
		st:   st,
		keys: &keys{recs: st.Records("", store.KindIdempotency), locks: filepath.Join(st.Root(), "mcp", "locks")},
	}
	s.addTools(o.Backends)
	return s, nil
}

// MCP is the SDK's server, to run on a transport.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// HTTPHandler serves the streamable HTTP transport, one session per client, a session idle
// for o.SessionIdle closed (DefaultSessionIdle), with no guard: HTTP puts it behind one.
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler {
	idle := o.SessionIdle
	if idle <= 0 {
		idle = DefaultSessionIdle
	}
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: MaxArguments + 1<<20,
		SessionTimeout:      idle,
	})
}

// ToolNames lists the tools, in the order they are listed.
func (s *Server) ToolNames() []string {
	names := make([]string, len(s.tools))
	for i, t := range s.tools {
		names[i] = t.name
	}
	return names
}

const instructions = `crw runs durable agent workflows (JavaScript or TypeScript) whose every step is journaled. ` +
	`start a run, watch it with status (next for a session run's steps), answer its decisions, resume it once ` +
	`a usage or rate limit passed, cancel it; inspect, effects and audit diagnose it, recover reconciles a call ` +
	`whose outcome is unknown, shadow replays a changed script against a recorded run. Every answer is ` +
	`{<member>: ..., "error": null}, or on a failure {<member>: null, "error": {code, message, detail, ` +
	`safe_response, run, diagnostic}}: follow error.diagnostic.nextAction when there is one, else ` +
	`error.safe_response. Mutations (start, dispatched, answer, cancel, resume, recover) take a request_key: ` +
	`send the same key to retry a request safely.`
