package cli

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver"
	"github.com/crw-dev/crw/engine/appserver"
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
			if listen == "" && (tokenFile != "" || remote || len(origins) > 0) {
				return errs.New(errs.InvalidRequest, "--token-file, --allow-remote and --allow-origin go with --listen")
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
			srv, err := mcpserver.New(mcpserver.Options{State: root, Backends: g.backends, Version: appserver.Version()})
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
			return serveHTTP(ctx, streams, listen, mcpserver.Guard(srv.HTTPHandler(), mcpserver.HTTPOptions{Token: token, Origins: origins}))
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "", "serve streamable HTTP on this host:port instead of stdio (loopback unless --allow-remote)")
	f.BoolVar(&remote, "allow-remote", false, "with --listen: allow an address that is not loopback")
	f.StringArrayVar(&origins, "allow-origin", nil, "with --listen: an Origin (scheme://host[:port]) allowed besides loopback ones (repeatable)")
	f.StringVar(&tokenFile, "token-file", "", "with --listen: the file that holds the bearer token (default $"+TokenEnv+")")
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
func serveHTTP(ctx context.Context, streams IO, addr string, h http.Handler) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return errs.New(errs.CapabilityUnavailable, "--listen %s: cannot listen", addr).Wrap(err).
			Because("listen", "listen_failed", "not_started", errs.Certain).Next("choose another address or free this one")
	}
	// Requests live in ctx: a signal ends the streams a client keeps open, so the server can stop.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	fmt.Fprintf(streams.ErrOut, "crw mcp: serving on http://%s/\n", l.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return errs.New(errs.CapabilityUnavailable, "--listen %s: the server stopped", addr).Wrap(err).
			Because("listen", "serve_failed", "stopped", errs.Certain)
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if srv.Shutdown(shut) != nil {
			srv.Close()
		}
		return nil
	}
}
