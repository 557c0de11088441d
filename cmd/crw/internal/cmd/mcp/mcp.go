// Package mcp is crw mcp: crw's run lifecycle and recovery reads served as a Model Context
// Protocol server, on stdio or over streamable HTTP.
package mcp

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

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/iostreams"
	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/userfile"
)

// TokenEnv holds crw mcp's bearer token when --token-file does not.
const TokenEnv = "CRW_MCP_TOKEN"

// minToken bounds how short a bearer token may be.
const minToken = 16

// httpFlags are the flags that go with --listen only.
var httpFlags = []string{"token-file", "allow-remote", "allow-origin", "max-connections", "max-client-connections", "max-sessions", "session-idle"}

// Options are crw mcp's.
type Options struct {
	cmdutil.Common
	// Listen is the address of the HTTP transport; "" serves stdio.
	Listen, TokenFile string
	AllowRemote       bool
	Origins           []string
	Limits            mcpserver.HTTPOptions
	// HTTPFlagSet: a flag that goes with --listen only was given.
	HTTPFlagSet bool
}

// NewCmdMCP is crw mcp; runF, when not nil, runs in place of the command.
func NewCmdMCP(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve crw's run lifecycle and recovery reads as a Model Context Protocol server",
		Long: `Serve the tools start, status, next, dispatched, answer, cancel, resume, inspect, effects,
audit, recover and shadow over the Model Context Protocol: on stdin and stdout (the default; the
server exits 0 at the end of its input), or with --listen ADDR over streamable HTTP. Runs live
in the state folder (--state, $CRW_STATE, ...), or on the etcd cluster --store (or $CRW_STORE)
names, as for every crw flow command.

Over HTTP every request needs the bearer token (--token-file FILE, else $CRW_MCP_TOKEN; at
least 16 bytes): without it, or with another, the answer is 401 invalid_authority. The address
must be loopback unless --allow-remote, and a request whose Origin is not loopback is refused
403 unless --allow-origin names it. docs/mcp.md describes every tool.

Exit status: 0 at the end of its input (stdio) or once stopped by SIGTERM, SIGINT or SIGHUP, 1 when it
cannot serve (the address cannot be listened on, the state folder cannot be opened), 2 on bad
input (flags, the token, messages that cannot be read).`,
		Example: `  crw mcp
  CRW_MCP_TOKEN=$(cat ~/.crw-token) crw mcp --listen 127.0.0.1:8765`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, &opts.Common, opts, opts.take, runF, runMCP),
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Listen, "listen", "", "serve streamable HTTP on this host:port instead of stdio (loopback unless --allow-remote)")
	fl.BoolVar(&opts.AllowRemote, "allow-remote", false, "with --listen: allow an address that is not loopback")
	fl.StringArrayVar(&opts.Origins, "allow-origin", nil, "with --listen: an Origin (scheme://host[:port]) allowed besides loopback ones (repeatable)")
	fl.StringVar(&opts.TokenFile, "token-file", "", "with --listen: the file that holds the bearer token (default $"+TokenEnv+")")
	fl.IntVar(&opts.Limits.MaxConnections, "max-connections", mcpserver.DefaultMaxConnections, "with --listen: the most connections open at once")
	fl.IntVar(&opts.Limits.MaxClientConnections, "max-client-connections", mcpserver.DefaultMaxClientConnections, "with --listen: the most connections open at once from one address")
	fl.IntVar(&opts.Limits.MaxSessions, "max-sessions", mcpserver.DefaultMaxSessions, "with --listen: the most MCP sessions open at once")
	fl.DurationVar(&opts.Limits.SessionIdle, "session-idle", mcpserver.DefaultSessionIdle, "with --listen: end an MCP session no request came for in this long")
	return cmd
}

// take takes whether a flag that goes with --listen only was given.
func (o *Options) take(cmd *cobra.Command, args []string) {
	o.HTTPFlagSet = false
	for _, name := range httpFlags {
		o.HTTPFlagSet = o.HTTPFlagSet || cmd.Flags().Changed(name)
	}
}

func runMCP(opts *Options) error {
	token, err := checkOptions(opts)
	if err != nil {
		return err
	}
	root, err := opts.StateDir()
	if err != nil {
		return err
	}
	srv, err := mcpserver.New(mcpserver.Options{State: root, Store: opts.StoreAddress(), Backends: opts.Backends, Version: codex.Version()})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(opts.Ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if opts.Listen == "" {
		err := srv.MCP().Run(ctx, srv.Stdio(ctx, opts.IO.In, opts.IO.Out))
		if err != nil && ctx.Err() == nil {
			return errs.New(errs.InvalidRequest, "crw mcp: the client's messages could not be read: %v", err)
		}
		return nil
	}
	limits := opts.Limits
	limits.Token, limits.Origins = token, opts.Origins
	return serveHTTP(ctx, opts.IO, opts.Listen, srv.HTTP(limits))
}

// checkOptions refuses flags that do not go together or out of bounds, and reads the bearer
// token --listen needs.
func checkOptions(opts *Options) (token string, err error) {
	if opts.Listen == "" && opts.HTTPFlagSet {
		return "", errs.New(errs.InvalidRequest, "--token-file, --allow-remote, --allow-origin, --max-connections, --max-client-connections, --max-sessions and --session-idle go with --listen")
	}
	l := opts.Limits
	if l.MaxConnections < 1 || l.MaxClientConnections < 1 || l.MaxSessions < 1 || l.SessionIdle < time.Second {
		return "", errs.New(errs.InvalidRequest, "--max-connections, --max-client-connections and --max-sessions must be 1 or more, --session-idle 1s or more")
	}
	if opts.Listen == "" {
		return "", nil
	}
	if err := mcpserver.CheckListen(opts.Listen, opts.AllowRemote); err != nil {
		return "", err
	}
	return readToken(opts.TokenFile)
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
func serveHTTP(ctx context.Context, ios *iostreams.IOStreams, addr string, h *mcpserver.HTTPServer) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return errs.New(errs.CapabilityUnavailable, "--listen %s: cannot listen", addr).Wrap(err).
			Because("listen", "listen_failed", "not_started", errs.Certain).Next("choose another address or free this one")
	}
	fmt.Fprintf(ios.ErrOut, "crw mcp: serving on http://%s/\n", l.Addr())
	if err := h.Serve(ctx, l); err != nil {
		return errs.New(errs.CapabilityUnavailable, "--listen %s: the server stopped", addr).Wrap(err).
			Because("listen", "serve_failed", "stopped", errs.Certain)
	}
	return nil
}
