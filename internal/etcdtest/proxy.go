package etcdtest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy is a TCP proxy in front of one member: a client reaching the member through it can be
// cut off (Partition) and let through again (Heal). A partition stalls traffic, as a network
// that drops every packet does: the connections stay open, no byte passes either way, and what
// was sent meanwhile arrives once it heals (TCP's retransmissions), late.
type Proxy struct {
	// Addr is the proxy's HOST:PORT, to name in place of the member's.
	Addr   string
	target string
	ln     net.Listener

	mu     sync.Mutex
	open   *sync.Cond // broadcast when the proxy heals or closes
	cut    bool
	closed bool
	conns  map[net.Conn]struct{}
}

// NewProxy starts a proxy to the member at target (HOST:PORT); it stops when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.open = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Partition stalls every byte between the proxy's clients and the member until Heal.
func (p *Proxy) Partition() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
}

// Heal lets the traffic the partition held, and all after it, through.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
	p.open.Broadcast()
}

// through waits while the proxy is partitioned; false once it is closed.
func (p *Proxy) through() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.cut && !p.closed {
		p.open.Wait()
	}
	return !p.closed
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *Proxy) serve(client net.Conn) {
	if !p.track(client) || !p.through() {
		client.Close()
		return
	}
	member, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(member) {
		client.Close()
		return
	}
	done := make(chan struct{}, 2)
	go p.pipe(member, client, done)
	go p.pipe(client, member, done)
	<-done
	client.Close()
	member.Close()
	<-done
	p.untrack(client)
	p.untrack(member)
}

// pipe copies from src to dst, each chunk read waiting for the proxy to be through before it
// is written.
func (p *Proxy) pipe(dst, src net.Conn, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.through() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			return
		}
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.open.Broadcast()
}
