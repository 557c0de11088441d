package etcdrpc

import (
	"context"
	"fmt"
	"time"
)

// Grant grants a lease of ttl seconds.
func (c *Client) Grant(ctx context.Context, ttl int64) (*LeaseGrantResponse, error) {
	// Not sent again to another member: two leases would be granted.
	data, err := c.call(ctx, "/etcdserverpb.Lease/LeaseGrant", putInt(nil, 1, ttl), false)
	if err != nil {
		return nil, err
	}
	resp, err := decoded(decodeLeaseGrant(data))
	if err == nil && resp.Error != "" {
		return nil, &Error{Code: CodeFailedPrecond, Message: "etcdserver: " + resp.Error}
	}
	return resp, err
}

// Revoke revokes a lease: the keys attached to it are deleted.
func (c *Client) Revoke(ctx context.Context, id LeaseID) (*LeaseRevokeResponse, error) {
	// Revoking twice revokes once (the second finds no lease).
	data, err := c.call(ctx, "/etcdserverpb.Lease/LeaseRevoke", putInt(nil, 1, int64(id)), true)
	if err != nil {
		return nil, err
	}
	return decoded(decodeLeaseRevoke(data))
}

// KeepAliveOnce keeps a lease alive once: the response's TTL is 0 or less when the lease is
// gone. It is a stream of its own of etcd's keepalive method, one request and its response.
func (c *Client) KeepAliveOnce(ctx context.Context, id LeaseID) (*LeaseKeepAliveResponse, error) {
	// A keepalive is sent again anywhere: it only refreshes the lease.
	data, err := c.call(ctx, "/etcdserverpb.Lease/LeaseKeepAlive", putInt(nil, 1, int64(id)), true)
	if err != nil {
		return nil, err
	}
	return decoded(decodeKeepAlive(data))
}

// KeepAlive keeps a lease alive, a third of its TTL after each keepalive, until ctx ends, the
// client closes, or the lease is gone (expired, revoked, or not kept alive for its TTL): then
// the channel closes. Each keepalive's response is sent on the channel when it is free.
func (c *Client) KeepAlive(ctx context.Context, id LeaseID) (<-chan *LeaseKeepAliveResponse, error) {
	// The first as the others: from a member with a leader, each member given its share of
	// the shortest TTL a lease has (the lease was just granted).
	attempt, cancel := context.WithTimeout(withSharedDeadline(WithRequireLeader(ctx)), firstKeepAliveWithin)
	first, err := c.KeepAliveOnce(attempt, id)
	cancel()
	if err != nil {
		return nil, err
	}
	if first.TTL <= 0 {
		return nil, &Error{Code: CodeNotFound, Message: fmt.Sprintf("etcdserver: requested lease not found (%x)", int64(id))}
	}
	out := make(chan *LeaseKeepAliveResponse, 1)
	out <- first
	go c.keepAlive(ctx, id, first.TTL, out)
	return out, nil
}

// firstKeepAliveWithin bounds the first keepalive of a lease just granted: less than the
// shortest TTL a store's lease has (2 s).
const firstKeepAliveWithin = 1500 * time.Millisecond

func (c *Client) keepAlive(ctx context.Context, id LeaseID, ttl int64, out chan<- *LeaseKeepAliveResponse) {
	defer close(out)
	deadline := time.Now().Add(time.Duration(ttl) * time.Second) // the lease expires then unless kept alive
	every := max(time.Duration(ttl)*time.Second/3, 500*time.Millisecond)
	next := time.Now().Add(every)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		if !time.Now().Before(deadline) {
			return
		}
		sent := time.Now()
		// A member with no leader refuses it at once (it would hold it for seconds), and the
		// members share the time left before the lease's end, so each is tried before it.
		attempt, cancel := context.WithDeadline(withSharedDeadline(WithRequireLeader(ctx)), deadline)
		resp, err := c.KeepAliveOnce(attempt, id)
		cancel()
		switch {
		case err != nil:
			next = time.Now().Add(min(500*time.Millisecond, time.Until(deadline))) // again soon, while the lease may still live
			continue
		case resp.TTL <= 0:
			return // gone
		}
		deadline, next = sent.Add(time.Duration(resp.TTL)*time.Second), sent.Add(every)
		select {
		case out <- resp:
		default:
		}
	}
}
