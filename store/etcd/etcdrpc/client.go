// Package etcdrpc is a client of etcd's v3 API that speaks gRPC itself, over Go's own HTTP/2,
// its messages built and read by hand (pb.go, messages.go): crw is built without gRPC's and
// protobuf's Go runtimes, whose package inits (protobuf's registries of etcd's API above all)
// cost every crw process ~5 ms of its start, a store on etcd or not.
//
// It is what the store on etcd needs of etcd and no more: gets, puts and transactions, leases
// and their keepalives, watches, TLS and a user's password. Its API follows etcd's Go client
// (go.etcd.io/etcd/client/v3: OpGet, Compare, Txn().If().Then().Else().Commit(), WithPrefix…),
// so code written for one reads as code for the other.
//
// A request goes to one member at a time, the one the last request reached. A member that
// does not answer (refused, reset, or silent for RequestTimeout: stopped, partitioned) is left
// for the next; a request that may have been applied there is not sent again but fails with
// Unavailable, for its caller to find out (as a gRPC client's would); one that changes nothing
// (a get, a transaction of gets) is sent to the next member.
package etcdrpc

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is how a Client reaches a cluster.
type Config struct {
	// Endpoints are the members' client addresses: host:port, or http(s)://host:port.
	Endpoints []string
	// TLS, when set, is how members are reached over TLS (https).
	TLS *tls.Config
	// Username and Password authenticate the client as an etcd user ("": none).
	Username, Password string
	// DialTimeout bounds reaching a member (connection and TLS handshake); 0 is 5 s.
	DialTimeout time.Duration
	// RequestTimeout bounds one request to one member when the caller's context has no
	// earlier deadline; 0 is 8 s (a gRPC client's keepalive of 5 s and its timeout of 3 s find
	// a silent member in as long).
	RequestTimeout time.Duration
	// ProbeEvery is how often a watch checks that its member answers and has a leader; 0 is
	// 5 s.
	ProbeEvery time.Duration
	// Transport, when set, carries the requests instead of the client's own connections: a
	// test's, to lose answers.
	Transport http.RoundTripper
}

// Client is a client of an etcd cluster. Its methods are safe for concurrent use.
type Client struct {
	cfg       Config
	endpoints []string // base URLs
	http      *http.Client

	mu      sync.Mutex
	pinned  int           // the endpoint requests go to first
	token   string        // the auth token, when authenticated
	authSem chan struct{} // one authentication at a time: a slot taken

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
}

// New is a client of the cluster cfg names. With a user, it authenticates at once: a wrong
// password is said here.
func New(cfg Config) (*Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcdrpc: no endpoint")
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 8 * time.Second
	}
	if cfg.ProbeEvery == 0 {
		cfg.ProbeEvery = 5 * time.Second
	}
	scheme := "http://"
	if cfg.TLS != nil {
		scheme = "https://"
		cfg.TLS = cfg.TLS.Clone()
	}
	c := &Client{cfg: cfg, authSem: make(chan struct{}, 1)}
	for _, ep := range cfg.Endpoints {
		if !strings.Contains(ep, "://") {
			ep = scheme + ep
		}
		c.endpoints = append(c.endpoints, strings.TrimRight(ep, "/"))
	}
	dialer := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}
	// gRPC is HTTP/2: over TLS as ALPN agrees it, and without TLS from the first byte (etcd
	// serves both on its client URLs).
	transport := &http.Transport{
		DialContext:         dialer.DialContext,
		TLSClientConfig:     cfg.TLS,
		TLSHandshakeTimeout: cfg.DialTimeout,
		IdleConnTimeout:     90 * time.Second,
		Protocols:           new(http.Protocols),
		HTTP2:               &http.HTTP2Config{PingTimeout: 3 * time.Second, SendPingTimeout: 5 * time.Second},
	}
	transport.Protocols.SetHTTP2(true)
	transport.Protocols.SetUnencryptedHTTP2(true)
	var rt http.RoundTripper = transport
	if cfg.Transport != nil {
		rt = cfg.Transport
	}
	c.http = &http.Client{Transport: rt}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if cfg.Username != "" {
		if err := c.authenticate(context.Background(), ""); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// Close ends the client's keepalives and watches.
func (c *Client) Close() error {
	c.cancel()
	c.http.CloseIdleConnections()
	return nil
}

// Code is a gRPC status code, as etcd gives it with an error.
type Code int

// The codes a caller tells apart.
const (
	CodeCanceled         Code = 1
	CodeInvalidArgument  Code = 3
	CodeDeadlineExceeded Code = 4
	CodeNotFound         Code = 5
	CodeFailedPrecond    Code = 9
	CodeUnauthenticated  Code = 16
	CodeUnavailable      Code = 14
)

// Error is an error etcd answered, or Unavailable for a member that did not answer.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return e.Message }

// CodeOf is err's code: 0 for an error that is no Error.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// Get reads key (and the range its options give).
func (c *Client) Get(ctx context.Context, key string, opts ...OpOption) (*GetResponse, error) {
	op := OpGet(key, opts...)
	data, err := c.call(ctx, "/etcdserverpb.KV/Range", op.appendRange(nil), true)
	if err != nil {
		return nil, err
	}
	return decoded(decodeRange(data))
}

// Put writes val at key.
func (c *Client) Put(ctx context.Context, key, val string, opts ...OpOption) (*PutResponse, error) {
	op := OpPut(key, val, opts...)
	data, err := c.call(ctx, "/etcdserverpb.KV/Put", op.appendPut(nil), false)
	if err != nil {
		return nil, err
	}
	return decoded(decodePut(data))
}

// Delete deletes key (and the range its options give).
func (c *Client) Delete(ctx context.Context, key string, opts ...OpOption) (*DeleteRangeResponse, error) {
	op := OpDelete(key, opts...)
	data, err := c.call(ctx, "/etcdserverpb.KV/DeleteRange", op.appendDeleteRange(nil), false)
	if err != nil {
		return nil, err
	}
	return decoded(decodeDeleteRange(data))
}

// decoded is a response decoded, or the error of one that could not be: an answer this client
// cannot read, not a member that did not answer.
func decoded[T any](resp *T, err error) (*T, error) {
	if err != nil {
		return nil, &Error{Code: codeBadResponse, Message: "etcdrpc: the response cannot be read: " + err.Error()}
	}
	return resp, nil
}

// codeBadResponse is a response this client cannot read (gRPC's Internal).
const codeBadResponse Code = 13

// Txn starts a transaction sent with ctx.
func (c *Client) Txn(ctx context.Context) *Txn { return &Txn{c: c, ctx: ctx} }

// call sends the message req to the method at path of the members, the pinned one first, and
// returns the response's message. A member that cannot be reached (nothing was sent) is left
// for the next; one that was sent the request and did not answer is too, and the request is
// sent to the next only when it is retriable (it changes nothing), else it fails with
// Unavailable.
func (c *Client) call(ctx context.Context, path string, req []byte, retriable bool) ([]byte, error) {
	reauthenticated := false
	var last error
	for attempt := 0; attempt < len(c.endpoints); attempt++ {
		i := c.pinnedEndpoint()
		token := c.currentToken()
		resp, err := c.unary(ctx, c.endpoints[i], path, req, c.attemptTimeout(ctx, attempt), token)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var e *Error
		if errors.As(err, &e) {
			if tokenRefused(e) && !reauthenticated && c.cfg.Username != "" && path != authenticatePath {
				// A token expires, or predates a change of users or roles: authenticate
				// again, once, and send the request again (it was refused, so nothing was
				// applied).
				reauthenticated = true
				if aerr := c.authenticate(ctx, token); aerr != nil {
					return nil, aerr
				}
				attempt--
				continue
			}
			if e.Code != CodeUnavailable {
				return nil, err // etcd's answer
			}
		}
		last = err
		c.leave(i)
		var unsent *unsentError
		if !retriable && !errors.As(err, &unsent) {
			return nil, &Error{Code: CodeUnavailable, Message: fmt.Sprintf("etcdserver: %s did not answer: %v", c.endpoints[i], err)}
		}
	}
	var e *Error
	if errors.As(last, &e) {
		return nil, last
	}
	return nil, &Error{Code: CodeUnavailable, Message: fmt.Sprintf("etcdserver: no member answered: %v", last)}
}

// tokenRefused is whether etcd refused a request for its auth token: expired, older than the
// last change of users or roles, or none (as clientv3's retry interceptor reads them).
func tokenRefused(e *Error) bool {
	for _, m := range []string{"invalid auth token", "revision of auth store is old", "user name is empty"} {
		if strings.Contains(e.Message, m) {
			return true
		}
	}
	return false
}

type sharedKey struct{}

// withSharedDeadline has ctx's requests give each member they try an equal share of the time
// left before ctx's deadline, so that every member is tried before it (a keepalive, which
// must reach one that answers before its lease ends).
func withSharedDeadline(ctx context.Context) context.Context {
	return context.WithValue(ctx, sharedKey{}, true)
}

// attemptTimeout is how long the attempt-th member tried for ctx's request is given:
// RequestTimeout, or its share of what is left (withSharedDeadline).
func (c *Client) attemptTimeout(ctx context.Context, attempt int) time.Duration {
	d := c.cfg.RequestTimeout
	if shared, _ := ctx.Value(sharedKey{}).(bool); shared {
		if deadline, ok := ctx.Deadline(); ok {
			d = min(d, time.Until(deadline)/time.Duration(max(len(c.endpoints)-attempt, 1)))
		}
	}
	return d
}

// unsentError is a request that never reached its member: its connection could not be made.
type unsentError struct{ err error }

func (e *unsentError) Error() string { return e.err.Error() }
func (e *unsentError) Unwrap() error { return e.err }

// unary is one gRPC call of one request and one response to one member, in timeout at most.
func (c *Client) unary(ctx context.Context, endpoint, path string, req []byte, timeout time.Duration, token string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hr, err := c.newRequest(ctx, endpoint+path, bytes.NewReader(frame(req)), token)
	if err != nil {
		return nil, err
	}
	res, err := c.http.Do(hr)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, &unsentError{err}
		}
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, grpcStatus(res) // no gRPC server's answer (a proxy's, say): not etcd's
	}
	msg, err := readFrame(res.Body)
	if err != nil && err != io.EOF {
		return nil, err
	}
	// The status is in the trailers, once the body is read (or in the headers of a response
	// that has no message).
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxMessage))
	if err := grpcStatus(res); err != nil {
		return nil, err
	}
	if msg == nil {
		return nil, &Error{Code: codeBadResponse, Message: "etcdrpc: " + path + " answered no message"}
	}
	return msg, nil
}

// maxMessage bounds one message received: etcd's own default (--max-request-bytes 1.5 MiB)
// bounds what it takes; what it sends, the store reads in pages of a few MiB at most.
const maxMessage = 256 << 20

// frame is msg as gRPC sends it: not compressed, its length, its bytes.
func frame(msg []byte) []byte {
	b := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:5], uint32(len(msg)))
	copy(b[5:], msg)
	return b
}

// readFrame reads one gRPC message from r: io.EOF when the stream has none more.
func readFrame(r io.Reader) ([]byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return nil, errTruncated
		}
		return nil, err
	}
	if head[0] != 0 {
		return nil, &Error{Code: codeBadResponse, Message: "etcdrpc: a compressed gRPC message"}
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n > maxMessage {
		return nil, &Error{Code: codeBadResponse, Message: fmt.Sprintf("etcdrpc: a gRPC message of %d bytes", n)}
	}
	// Read as it comes, not allocated from the length alone: a header says what it likes.
	msg, err := io.ReadAll(io.LimitReader(r, int64(n)))
	if err != nil || len(msg) != int(n) {
		return nil, errTruncated
	}
	return msg, nil
}

// grpcStatus is the error a response's gRPC status says, nil for OK.
func grpcStatus(res *http.Response) error {
	if res.StatusCode != http.StatusOK {
		return &Error{Code: CodeUnavailable, Message: fmt.Sprintf("etcdserver: HTTP %d", res.StatusCode)}
	}
	status, message := res.Trailer.Get("Grpc-Status"), res.Trailer.Get("Grpc-Message")
	if status == "" {
		status, message = res.Header.Get("Grpc-Status"), res.Header.Get("Grpc-Message")
	}
	if status == "" {
		return &Error{Code: CodeUnavailable, Message: "etcdserver: a response with no gRPC status"}
	}
	code, err := strconv.Atoi(status)
	if err != nil {
		return &Error{Code: codeBadResponse, Message: "etcdserver: a gRPC status " + status}
	}
	if code == 0 {
		return nil
	}
	if m, err := url.PathUnescape(message); err == nil {
		message = m
	}
	return &Error{Code: Code(code), Message: message}
}

// newRequest is a gRPC request of token's (none when "").
func (c *Client) newRequest(ctx context.Context, url string, body io.Reader, token string) (*http.Request, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/grpc")
	hr.Header.Set("Te", "trailers")
	if token != "" && !strings.HasSuffix(url, authenticatePath) {
		hr.Header.Set("Token", token) // etcd's metadata key for an auth token
	}
	if requiresLeader(ctx) {
		// etcd refuses the request on a member with no leader, and ends a watch when its
		// member loses it.
		hr.Header.Set("Hasleader", "true")
	}
	return hr, nil
}

func (c *Client) pinnedEndpoint() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pinned
}

// leave moves the requests after this one to the member after i, unless another request
// moved them already.
func (c *Client) leave(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pinned == i {
		c.pinned = (i + 1) % len(c.endpoints)
	}
}

// authenticatePath is etcd's method that gives a token: it is sent with none.
const authenticatePath = "/etcdserverpb.Auth/Authenticate"

func (c *Client) currentToken() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token
}

// authenticate takes a token for the client's user, unless another request took one since
// stale was refused: one at a time, the token in use all along for the requests meanwhile.
func (c *Client) authenticate(ctx context.Context, stale string) error {
	select {
	case c.authSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.authSem }()
	if c.currentToken() != stale {
		return nil // taken again already
	}
	var req []byte
	req = putBytes(req, 1, []byte(c.cfg.Username))
	req = putBytes(req, 2, []byte(c.cfg.Password))
	data, err := c.call(ctx, authenticatePath, req, true)
	if err != nil {
		return err
	}
	var token string
	if err := eachField(data, func(field, wire int, v uint64, b []byte) error {
		if field == 2 {
			token = string(b)
		}
		return nil
	}); err != nil {
		return &Error{Code: codeBadResponse, Message: "etcdrpc: the response cannot be read: " + err.Error()}
	}
	c.mu.Lock()
	c.token = token
	c.mu.Unlock()
	return nil
}
