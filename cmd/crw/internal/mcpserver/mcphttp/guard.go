// Package mcphttp is crw mcp's streamable HTTP transport: the guard in front of it (the bearer
// token, Origin, a loopback address to listen on) and its limits (a connection tracker that
// makes the oldest unauthenticated connection give way, timeouts the token lifts, a session
// cap and idle end, memory given back after a burst).
package mcphttp

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/wire"
	"github.com/crw-dev/crw/errs"
)

// Options guard the streamable HTTP transport.
type Options struct {
	// Token is the bearer token every request must carry (required).
	Token string
	// Origins are the non-loopback Origin values allowed besides loopback ones (scheme://host[:port]).
	Origins []string

	// MaxConnections bounds the open connections (DefaultMaxConnections; never more than three
	// quarters of the descriptors the process may open), MaxClientConnections those of one
	// remote address (DefaultMaxClientConnections). A connection over a bound takes the place of
	// the oldest one that has not shown the token, or is closed when all have.
	MaxConnections, MaxClientConnections int
	// MaxSessions bounds the MCP sessions open at once (DefaultMaxSessions); SessionIdle ends a
	// session no request came for in that long (DefaultSessionIdle).
	MaxSessions int
	SessionIdle time.Duration
}

// Guard wraps h: a request whose Origin header names a host that is not loopback and not one of
// the allowed origins is refused (403: a page's script reaching the server through DNS
// rebinding), and one without the bearer token, or with another, is refused 401. Both answer
// an error object with the contract's invalid_authority and no more about the token.
func Guard(h http.Handler, o Options) http.Handler {
	want := sha256.Sum256([]byte(o.Token))
	allowed := map[string]bool{}
	for _, origin := range o.Origins {
		allowed[strings.TrimRight(strings.ToLower(origin), "/")] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !allowed[strings.ToLower(origin)] && !loopbackOrigin(origin) {
			w.Header().Set("Connection", "close")
			refuse(w, http.StatusForbidden, errs.New(errs.InvalidAuthority, "the request's Origin %q is not loopback and not allowed (--allow-origin)", wire.Clean(origin, 200)).
				Because("http", "origin_refused", "not_started", errs.Certain).Next("send requests from a loopback origin, or start crw mcp with --allow-origin"))
			return
		}
		token, ok := bearerToken(r.Header.Get("Authorization"))
		got := sha256.Sum256([]byte(token))
		if !ok || o.Token == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="crw"`)
			w.Header().Set("Connection", "close") // a client without the token keeps no connection
			refuse(w, http.StatusUnauthorized, errs.New(errs.InvalidAuthority, "a bearer token is required, and the one presented (if any) is not the server's").
				Because("http", "bearer_token_refused", "not_started", errs.Certain).Next("send Authorization: Bearer with the server's token (--token-file or $CRW_MCP_TOKEN)"))
			return
		}
		trusted(w, r)
		h.ServeHTTP(w, r)
	})
}

// bearerToken reads an Authorization header's bearer token; the scheme's name is
// case-insensitive (RFC 9110).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return token, true
}

func refuse(w http.ResponseWriter, status int, e *errs.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": wire.Error(e, nil)})
}

// loopbackOrigin tells whether an Origin names localhost or a loopback address.
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return loopbackHost(u.Hostname())
}

func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// CheckListen refuses an address to listen on that is not loopback (an empty host is every
// interface) unless remote is allowed.
func CheckListen(addr string, remote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return errs.New(errs.InvalidRequest, "--listen %s: not host:port: %v", addr, err)
	}
	if !remote && !loopbackHost(host) {
		return errs.New(errs.InvalidRequest, "--listen %s: not a loopback address; give --allow-remote to serve other hosts (with the token over TLS you terminate in front of it)", addr)
	}
	return nil
}
