package etcdrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// WatchResponse is what a watch saw: events, its creation, or its end.
type WatchResponse struct {
	Header          ResponseHeader
	Events          []*Event
	CompactRevision int64
	Created         bool
	Canceled        bool
	cancelReason    string
	err             error
}

// Err is why the watch ended, when this response ends it.
func (r *WatchResponse) Err() error {
	switch {
	case r.err != nil:
		return r.err
	case r.CompactRevision != 0:
		return &Error{Code: CodeOutOfRange, Message: "etcdserver: mvcc: required revision has been compacted"}
	case r.Canceled && r.cancelReason != "":
		return &Error{Code: CodeFailedPrecond, Message: r.cancelReason}
	case r.Canceled:
		return &Error{Code: CodeCanceled, Message: "etcdserver: the watch was cancelled"}
	}
	return nil
}

// CodeOutOfRange is a revision compacted away.
const CodeOutOfRange Code = 11

// WatchChan is the responses of a watch.
type WatchChan <-chan WatchResponse

// Watch watches key (and the range its options give) from the revision WithRev gives (the
// next one without). The channel closes when ctx ends or the client closes, and when the watch
// ends otherwise, after a last response whose Err says why: etcd cancelled it (a compaction, a
// member without a leader under WithRequireLeader), its stream broke, or its member stopped
// answering (a probe of it, every ProbeEvery, failed). A watch that ended is not taken up
// again: its caller watches anew, from what it read.
func (c *Client) Watch(ctx context.Context, key string, opts ...OpOption) WatchChan {
	op := OpGet(key, opts...)
	out := make(chan WatchResponse, 16)
	go c.watch(ctx, &op, out)
	return out
}

func (c *Client) watch(ctx context.Context, op *Op, out chan<- WatchResponse) {
	defer close(out)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel) // the client's close ends it too
	defer stop()

	var create []byte
	create = putBytesAlways(create, 1, op.key)
	create = putBytes(create, 2, op.end)
	create = putInt(create, 3, op.rev)
	var filters []byte
	if op.filterPut {
		filters = appendVarint(filters, 0) // NOPUT
	}
	if op.filterDelete {
		filters = appendVarint(filters, 1) // NODELETE
	}
	create = putBytes(create, 5, filters) // packed
	body := frame(putBytesAlways(nil, 1, create))
	i := c.pinnedEndpoint()
	endpoint := c.endpoints[i]
	end := func(err error) {
		if ctx.Err() != nil || c.ctx.Err() != nil {
			return // the caller's end: no error to say
		}
		var e *Error
		if !errors.As(err, &e) || e.Code == CodeUnavailable {
			c.leave(i)
			e = &Error{Code: CodeUnavailable, Message: fmt.Sprintf("etcdserver: the watch at %s ended: %v", endpoint, err)}
		}
		select {
		case out <- WatchResponse{err: e}:
		case <-ctx.Done():
		case <-c.ctx.Done():
		}
	}
	// The stream is silent while nothing changes, whether its member lives or not, and its
	// opening may be too: a probe of the member, with the watch's own leader requirement,
	// says which, from the first moment; one that fails ends the watch.
	var probeErr error
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		if probeErr = c.probe(wctx, endpoint, op.key); probeErr != nil {
			cancel()
		}
	}()
	failed := func(err error) error {
		if wctx.Err() != nil && ctx.Err() == nil && c.ctx.Err() == nil {
			<-probed
			if probeErr != nil {
				return fmt.Errorf("its member did not answer a probe: %w", probeErr)
			}
		}
		return err
	}
	// The request's body stays open while the watch lives: its end would be the client's
	// half-close of the stream.
	reqBody, sendBody := io.Pipe()
	defer sendBody.Close()
	go func() { _, _ = sendBody.Write(body) }()
	hr, err := c.newRequest(wctx, endpoint+"/etcdserverpb.Watch/Watch", reqBody, c.currentToken())
	if err != nil {
		out <- WatchResponse{err: err}
		return
	}
	res, err := c.http.Do(hr)
	if err != nil {
		end(failed(err))
		return
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		end(grpcStatus(res))
		return
	}
	msgs := make(chan watchMessage)
	go readWatch(wctx, res, msgs)
	for {
		select {
		case <-wctx.Done():
			end(failed(wctx.Err()))
			return
		case m, ok := <-msgs:
			switch {
			case !ok:
				end(failed(io.ErrUnexpectedEOF))
				return
			case m.err != nil:
				end(failed(m.err))
				return
			}
			resp := m.resp
			ends := resp.Canceled || resp.CompactRevision != 0 // etcd refused it (created and cancelled at once) or ended it
			if resp.Created && !op.createdNotify && len(resp.Events) == 0 && !ends {
				continue
			}
			select {
			case out <- resp:
			case <-wctx.Done():
				end(failed(wctx.Err())) // nothing, when its caller ended it
				return
			}
			if ends {
				return
			}
		}
	}
}

type watchMessage struct {
	resp WatchResponse
	err  error
}

// readWatch reads the stream's messages until it ends: its error then, from its gRPC status
// (etcd's, such as no leader) when it has one.
func readWatch(ctx context.Context, res *http.Response, msgs chan<- watchMessage) {
	defer close(msgs)
	for {
		var msg watchMessage
		data, err := readFrame(res.Body)
		switch {
		case err == io.EOF:
			msg.err = grpcStatus(res)
			if msg.err == nil {
				msg.err = io.EOF
			}
		case err != nil:
			msg.err = err
		default:
			var resp *WatchResponse
			resp, msg.err = decoded(decodeWatch(data))
			if resp != nil {
				msg.resp = *resp
			}
		}
		select {
		case msgs <- msg:
		case <-ctx.Done():
			return
		}
		if msg.err != nil {
			return
		}
	}
}

// probe reads key's count from endpoint every ProbeEvery (a linearizable read: one the
// member's leader must confirm) until ctx ends (nil) or one is not answered (its error).
func (c *Client) probe(ctx context.Context, endpoint string, key []byte) error {
	op := Op{key: key, countOnly: true}
	req := op.appendRange(nil)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(c.cfg.ProbeEvery):
		}
		_, err := c.unary(WithRequireLeader(ctx), endpoint, "/etcdserverpb.KV/Range", req, min(c.cfg.RequestTimeout, probeTimeout), c.currentToken())
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			var e *Error
			if errors.As(err, &e) && e.Code != CodeUnavailable && e.Code != CodeDeadlineExceeded {
				continue // an answer: the member lives (a permission, say, is no reason to end)
			}
			return err
		}
	}
}

// probeTimeout is how long a watch's probe waits for its member.
const probeTimeout = 3 * time.Second
