// Package mcpserver is crw mcp: a Model Context Protocol server (the official Go SDK) whose
// tools (package tools) are a run's lifecycle and the recovery reads, doing what the crw flow
// commands of the same names do through the same code (package ops, the run service). It
// keeps the server's bookkeeping of each call: who made it, the run it names, every answer, an
// error's too, in the tool's strict envelope (package wire: the error contract's stable code, fixed
// message, safe response and bounded diagnostic), mutations idempotent by a request key kept in
// the state folder (package keys) and recorded in its audit. Its transports are packages stdio
// and mcphttp.
package mcpserver

import (
	"context"
	"io"
	"net/http"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/keys"
	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/mcphttp"
	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/stdio"
	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/tools"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/store"
)

// Name is the server's name, as it introduces itself to clients.
const Name = "crw"

// Options configure a server.
type Options struct {
	// State is the state folder (ops.StateDir).
	State string
	// Store is where the runs live (ops.StoreAddress): "" the state folder, etcd://… a
	// cluster, the state folder then keeping this host's part (the request keys' locks).
	Store string
	// Backends are the backends of this build.
	Backends *backend.Registry
	// Version is crw's version, as the server introduces itself.
	Version string
}

// Server is crw's MCP server on a state folder.
type Server struct {
	mcp   *mcp.Server
	svc   *engine.Service
	state string
	keys  *keys.Keys
	tools []tools.Tool
}

// New builds the server and its tools on the runs of the store o names.
func New(o Options) (*Server, error) {
	svc, st, loc, err := ops.OpenStore(context.Background(), o.Store, o.State, o.Backends)
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
		svc:   svc,
		state: loc.Root(),
		keys:  keys.New(st.Records("", store.KindIdempotency), filepath.Join(o.State, "mcp", "locks")),
	}
	facts := tools.Facts{Name: Name, Version: version, State: loc.Root(), Store: o.Store}
	for _, t := range tools.All(svc, loc, o.Backends, facts) {
		s.add(t)
	}
	return s, nil
}

// MCP is the SDK's server, to run on a transport.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// HTTPHandler serves the streamable HTTP transport, one session per client, a session idle
// for o.SessionIdle closed (DefaultSessionIdle), with no guard: HTTP puts it behind one.
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler { return mcphttp.Handler(s.mcp, o) }

// HTTP is the server's HTTP transport with o's token, origins and limits.
func (s *Server) HTTP(o HTTPOptions) *HTTPServer { return mcphttp.New(s.mcp, o) }

// Stdio is the transport on the server's standard input and output (package stdio).
func (s *Server) Stdio(ctx context.Context, in io.Reader, out io.Writer) mcp.Transport {
	payloads := map[string]string{}
	for _, t := range s.tools {
		payloads[t.Name] = t.Payload
	}
	return stdio.New(ctx, in, out, payloads)
}

// ToolNames lists the tools, in the order they are listed.
func (s *Server) ToolNames() []string {
	names := make([]string, len(s.tools))
	for i, t := range s.tools {
		names[i] = t.Name
	}
	return names
}

const instructions = `crw runs durable agent workflows (JavaScript or TypeScript) whose every step is journaled. ` +
	`start a run, watch it with status (next for a session run's steps), answer its decisions, resume it once ` +
	`a usage or rate limit passed, cancel it; inspect, effects and audit diagnose it, recover reconciles a call ` +
	`whose outcome is unknown, shadow replays a changed script against a recorded run. list finds runs, ` +
	`show reads a run's calls (one call's prompt and answer), logs its log and trace its journal rows, a page at ` +
	`a time; capabilities says which backends this host can run and what each lacks. Every answer is ` +
	`{<member>: ..., "error": null}, or on a failure {<member>: null, "error": {code, message, detail, ` +
	`safe_response, run, diagnostic}}: follow error.diagnostic.nextAction when there is one, else ` +
	`error.safe_response. Mutations (start, dispatched, answer, cancel, resume, recover) take a request_key: ` +
	`send the same key to retry a request safely.`
