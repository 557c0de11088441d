package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/userfile"
)

// TokenEnv holds crw mcp's bearer token when --token-file does not.
const TokenEnv = "CRW_MCP_TOKEN"

// minToken bounds how short a bearer token may be.
const minToken = 16

func newCmdMCP(g *globals, streams IO) *cobra.Command {
	var listen, tokenFile string
	var remote bool
	var origins []string
	var limits mcpserver.HTTPOptions
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve crw's run lifecycle and recovery reads as a Model Context Protocol server",
		Long: `Serve the tools start, status, next, dispatched, answer, cancel, resume, inspect, effects,
audit, recover and shadow over the Model Context Protocol: on stdin and stdout (the default; the
server exits 0 at the end of its input), or with --listen ADDR over streamable HTTP. Runs live
in the state folder (--state, $CRW_STATE, ...), as for every crw flow command.

Over HTTP every request needs the bearer token (--token-file FILE, else $CRW_MCP_TOKEN; at
least 16 bytes): without it, or with another, the answer is 401 invalid_authority. The address
must be loopback unless --allow-remote, and a request whose Origin is not loopback is refused
403 unless --allow-origin names it. docs/mcp.md describes every tool.`,
		Example: `  crw mcp
  CRW_MCP_TOKEN=$(cat ~/.crw-token) crw mcp --listen 127.0.0.1:8765`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			httpOnly := false
			for _, name := range []string{"token-file", "allow-remote", "allow-origin", "max-connections", "max-client-connections", "max-sessions", "session-idle"} {
				httpOnly = httpOnly || cmd.Flags().Changed(name)
			}
			if listen == "" && httpOnly {
				return errs.New(errs.InvalidRequest, "--token-file, --allow-remote, --allow-origin, --max-connections, --max-client-connections, --max-sessions and --session-idle go with --listen")
			}
			if limits.MaxConnections < 1 || limits.MaxClientConnections < 1 || limits.MaxSessions < 1 || limits.SessionIdle < time.Second {
				return errs.New(errs.InvalidRequest, "--max-connections, --max-client-connections and --max-sessions must be 1 or more, --session-idle 1s or more")
			}
			var token string
			if listen != "" {
				if err := mcpserver.CheckListen(listen, remote); err != nil {
					return err
				}
				var err error
				if token, err = readToken(tokenFile); err != nil {
					return err
				}
			}
			root, err := g.stateDir()
			if err != nil {
				return err
			}
			srv, err := mcpserver.New(mcpserver.Options{State: root, Backends: g.backends, Version: codex.Version()})
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			if listen == "" {
				err := srv.MCP().Run(ctx, srv.Stdio(ctx, streams.In, streams.Out))
				if err != nil && ctx.Err() == nil {
					return errs.New(errs.InvalidRequest, "crw mcp: the client's messages could not be read: %v", err)
				}
				return nil
			}
			limits.Token, limits.Origins = token, origins
			return serveHTTP(ctx, streams, listen, srv.HTTP(limits))
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "", "serve streamable HTTP on this host:port instead of stdio (loopback unless --allow-remote)")
	f.BoolVar(&remote, "allow-remote", false, "with --listen: allow an address that is not loopback")
	f.StringArrayVar(&origins, "allow-origin", nil, "with --listen: an Origin (scheme://host[:port]) allowed besides loopback ones (repeatable)")
	f.StringVar(&tokenFile, "token-file", "", "with --listen: the file that holds the bearer token (default $"+TokenEnv+")")
	f.IntVar(&limits.MaxConnections, "max-connections", mcpserver.DefaultMaxConnections, "with --listen: the most connections open at once")
	f.IntVar(&limits.MaxClientConnections, "max-client-connections", mcpserver.DefaultMaxClientConnections, "with --listen: the most connections open at once from one address")
	f.IntVar(&limits.MaxSessions, "max-sessions", mcpserver.DefaultMaxSessions, "with --listen: the most MCP sessions open at once")
	f.DurationVar(&limits.SessionIdle, "session-idle", mcpserver.DefaultSessionIdle, "with --listen: end an MCP session no request came for in this long")
	return cmd
}

// readToken reads the bearer token: the file's content, else $CRW_MCP_TOKEN, trimmed.
func readToken(file string) (string, error) {
	token, where := os.Getenv(TokenEnv), "$"+TokenEnv
	if file != "" {
		data, err := userfile.Read(file, 64<<10)
		if err != nil {
			return "", errs.New(errs.InvalidRequest, "--token-file %s: cannot read: %v", file, err)
		}
		token, where = string(data), "--token-file "+file
	}
	token = strings.TrimSpace(token)
	switch {
	case token == "":
		return "", errs.New(errs.InvalidRequest, "--listen needs a bearer token: --token-file FILE or $%s", TokenEnv)
	case len(token) < minToken:
		return "", errs.New(errs.InvalidRequest, "%s: the token is %d bytes; at least %d are needed", where, len(token), minToken)
	}
	return token, nil
}

// serveHTTP serves h on addr until ctx ends, saying where on stderr.
func serveHTTP(ctx context.Context, streams IO, addr string, h *mcpserver.HTTPServer) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return errs.New(errs.CapabilityUnavailable, "--listen %s: cannot listen", addr).Wrap(err).
			Because("listen", "listen_failed", "not_started", errs.Certain).Next("choose another address or free this one")
	}
	fmt.Fprintf(streams.ErrOut, "crw mcp: serving on http://%s/\n", l.Addr())
	if err := h.Serve(ctx, l); err != nil {
		return errs.New(errs.CapabilityUnavailable, "--listen %s: the server stopped", addr).Wrap(err).
			Because("listen", "serve_failed", "stopped", errs.Certain)
	}
	return nil
}
