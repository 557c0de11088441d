package mcphttp

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/wire"
	"github.com/crw-dev/crw/errs"
)

// The HTTP transport's defaults (docs/mcp.md, "Limits").
const (
	DefaultMaxConnections       = 4096
	DefaultMaxClientConnections = 256
	DefaultMaxSessions          = 1024
	DefaultSessionIdle          = 30 * time.Minute
)

// What a connection that has not yet shown the token may take: a silent one is closed after
// headerTimeout, one that sends slowly or reads its answer slowly after requestTimeout. A
// request with the token lifts them (a tool call's answer may stream for minutes).
const (
	headerTimeout  = 10 * time.Second
	requestTimeout = 30 * time.Second
	idleTimeout    = 2 * time.Minute
)

// Server serves the streamable HTTP transport behind the guard, within its limits.
type Server struct {
	srv   *http.Server
	conns *connTracker
	mcp   *mcp.Server
	// peakSessions is the most sessions open since the server last gave memory back.
	peakSessions atomic.Int64
}

// New is s's HTTP transport with o's token, origins and limits.
func New(s *mcp.Server, o Options) *Server {
	o = o.withDefaults()
	conns := &connTracker{max: o.MaxConnections, perClient: o.MaxClientConnections, byClient: map[string]int{}}
	h := &Server{conns: conns, mcp: s}
	h.srv = &http.Server{
		Handler:           Guard(h.sessionCap(Handler(s, o), o), o),
		ReadHeaderTimeout: headerTimeout,
		ReadTimeout:       requestTimeout,
		WriteTimeout:      requestTimeout,
		IdleTimeout:       idleTimeout,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
	}
	return h
}

// Handler serves the streamable HTTP transport of s, one session per client, a session idle
// for o.SessionIdle closed (DefaultSessionIdle), with no guard: New puts it behind one.
func Handler(s *mcp.Server, o Options) http.Handler {
	idle := o.SessionIdle
	if idle <= 0 {
		idle = DefaultSessionIdle
	}
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: wire.MaxArguments + 1<<20,
		SessionTimeout:      idle,
	})
}

// Serve serves on l until ctx ends; requests live in ctx, so a signal ends the streams a
// client keeps open and the server can stop.
func (h *Server) Serve(ctx context.Context, l net.Listener) error {
	h.srv.BaseContext = func(net.Listener) context.Context { return ctx }
	done := make(chan error, 1)
	go func() { done <- h.srv.Serve(&trackingListener{Listener: l, t: h.conns}) }()
	go h.reclaim(ctx, 10*time.Second)
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if h.srv.Shutdown(shut) != nil {
			h.srv.Close()
		}
		return nil
	}
}

// reclaim gives the memory back to the system once a burst of connections or sessions has
// ended: the runtime would keep it for a long time, and a server that lives for days would
// stay at the size its worst minute made it.
func (h *Server) reclaim(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		load := h.Connections() + h.sessions()
		peak := int(h.conns.peak.Load() + h.peakSessions.Load())
		if peak-load >= reclaimAfter && load < peak/2 {
			debug.FreeOSMemory()
			h.conns.peak.Store(int64(h.Connections()))
			h.peakSessions.Store(int64(h.sessions()))
		}
	}
}

// reclaimAfter is how many connections and sessions must have ended since the peak before the
// memory they held is given back.
const reclaimAfter = 256

// Connections is how many connections are open.
func (h *Server) Connections() int {
	h.conns.mu.Lock()
	defer h.conns.mu.Unlock()
	return len(h.conns.open)
}

func (o Options) withDefaults() Options {
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.MaxClientConnections <= 0 {
		o.MaxClientConnections = DefaultMaxClientConnections
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	if limit := fdLimit(); limit > 0 {
		// Above the descriptors the process may open, accept would fail for everyone alike.
		o.MaxConnections = max(1, min(o.MaxConnections, limit*3/4))
	}
	return o
}

// sessionCap refuses a new session (a request without Mcp-Session-Id) while max are open:
// 503 capability_unavailable, session_limit. Each session is memory the server keeps until
// it ends or is idle for SessionIdle.
func (s *Server) sessionCap(h http.Handler, o Options) http.Handler {
	var opening atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			h.ServeHTTP(w, r)
			return
		}
		n := int(opening.Add(1)) + s.sessions()
		defer opening.Add(-1)
		raise(&s.peakSessions, int64(n))
		if n > o.MaxSessions {
			w.Header().Set("Retry-After", "60")
			refuse(w, http.StatusServiceUnavailable, errs.New(errs.CapabilityUnavailable, "the server has %d MCP sessions open, its most (--max-sessions)", o.MaxSessions).
				Because("http", "session_limit", "not_started", errs.Certain).
				Next(fmt.Sprintf("end a session you no longer use (DELETE with its Mcp-Session-Id), or wait: a session idle for %s ends (--session-idle)", o.SessionIdle)))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// sessions is how many MCP sessions are open.
func (s *Server) sessions() int {
	n := 0
	for range s.mcp.Sessions() {
		n++
	}
	return n
}

// connKey keys the connection a request came on in its context.
type connKey struct{}

// trusted marks the connection r came on as one that showed the token, which is never evicted
// for a new one, and lifts the deadlines of an unauthenticated connection from r.
func trusted(w http.ResponseWriter, r *http.Request) {
	if c, ok := r.Context().Value(connKey{}).(*trackedConn); ok {
		c.trusted.Store(true)
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
}

// connTracker bounds the open connections, in all and of one remote address. A connection over
// a bound takes the place of the oldest one of the same scope that never showed the token; it
// is closed at once when every one has.
type connTracker struct {
	mu        sync.Mutex
	max       int
	perClient int
	open      []*trackedConn // in the order they were accepted
	byClient  map[string]int
	peak      atomic.Int64 // the most open since the memory was last given back
}

// raise makes v at least n.
func raise(v *atomic.Int64, n int64) {
	for {
		old := v.Load()
		if old >= n || v.CompareAndSwap(old, n) {
			return
		}
	}
}

type trackedConn struct {
	net.Conn
	t       *connTracker
	client  string
	trusted atomic.Bool
	once    sync.Once
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.t.remove(c) })
	return err
}

// admit tracks c, closing what it takes the place of; nil when c is refused.
func (t *connTracker) admit(c net.Conn) *trackedConn {
	client := c.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(client); err == nil {
		client = host
	}
	tc := &trackedConn{Conn: c, t: t, client: client}
	var evict []*trackedConn
	t.mu.Lock()
	if t.byClient[client] >= t.perClient {
		if old := t.oldestUntrustedLocked(client); old != nil {
			evict = append(evict, old)
			t.dropLocked(old)
		} else {
			t.mu.Unlock()
			return nil
		}
	}
	if len(t.open) >= t.max {
		if old := t.oldestUntrustedLocked(""); old != nil {
			evict = append(evict, old)
			t.dropLocked(old)
		} else {
			t.mu.Unlock()
			return nil
		}
	}
	t.open = append(t.open, tc)
	t.byClient[client]++
	raise(&t.peak, int64(len(t.open)))
	t.mu.Unlock()
	for _, old := range evict {
		_ = old.Conn.Close()
	}
	return tc
}

func (t *connTracker) oldestUntrustedLocked(client string) *trackedConn {
	for _, c := range t.open {
		if !c.trusted.Load() && (client == "" || c.client == client) {
			return c
		}
	}
	return nil
}

func (t *connTracker) dropLocked(c *trackedConn) {
	for i, o := range t.open {
		if o == c {
			t.open = append(t.open[:i], t.open[i+1:]...)
			if t.byClient[c.client]--; t.byClient[c.client] <= 0 {
				delete(t.byClient, c.client)
			}
			return
		}
	}
}

func (t *connTracker) remove(c *trackedConn) {
	t.mu.Lock()
	t.dropLocked(c)
	t.mu.Unlock()
}

// trackingListener admits each connection it accepts to its tracker; one refused is closed and
// the next accepted.
type trackingListener struct {
	net.Listener
	t *connTracker
}

func (l *trackingListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if tc := l.t.admit(c); tc != nil {
			return tc, nil
		}
		_ = c.Close()
	}
}
