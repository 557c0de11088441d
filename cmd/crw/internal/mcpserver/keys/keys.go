// Package keys is crw mcp's request keys: a mutation done once per key, its answer kept in the
// state folder and given again to the same request, a key used for another request refused.
package keys

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/wire"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store"
)

// MaxKeys bounds the request keys the state folder keeps: past it the oldest go, and a request
// with a key that went is done as a new one.
const MaxKeys = 10000

// MaxKeyLength bounds a request key.
const MaxKeyLength = 256

// keyWait bounds how long a request waits for another with its key to end.
const keyWait = 5 * time.Minute

// Keys are the request keys of mutations, kept as records of the store
// (store.KindIdempotency), so they outlive the server. A key's first request is done under a
// lock of its stripe (<state>/mcp/locks/, a flock: it is let go when its process dies), so a
// request with the same key, in this process or another of this host, waits for it to end and
// then gets its result. On a store that servers of other hosts share (etcd), the key is
// claimed by creating its record, which only one request can: a request whose key another
// host claimed waits for that request's result.
type Keys struct {
	recs  store.Records
	locks string
	host  string
	wait  time.Duration
}

// New keeps keys in recs, locking their stripes in the folder locks.
func New(recs store.Records, locks string) *Keys {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return NewOn(recs, locks, host+":"+locks, keyWait)
}

// NewOn is New for the servers whose locks are the folder locks, which a key's record names
// as host (the servers a flock of locks excludes: one host's, of one state folder), a request
// waiting up to wait for another host's.
func NewOn(recs store.Records, locks, host string, wait time.Duration) *Keys {
	return &Keys{recs: recs, locks: locks, host: host, wait: wait}
}

// keyRecord is what a key's record holds: the request it was first used for (its tool and the
// digest of its arguments) and what that request answered once it ended.
type keyRecord struct {
	At      time.Time       `json:"at"`
	Tool    string          `json:"tool"`
	Digest  string          `json:"digest"`
	Host    string          `json:"host,omitempty"` // the host (and locks folder) of the server that took it
	Done    bool            `json:"done"`
	IsError bool            `json:"is_error,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
}

// Do runs a mutation under its request key: once per key. The same key with the same request
// gets the first result (replayed); with another, idempotency_conflict. A first request that
// failed invalid_request did nothing, and its key is not kept.
func (k *Keys) Do(ctx context.Context, tool, key, dig string, run func() *mcp.CallToolResult) (res *mcp.CallToolResult, replayed bool, err error) {
	if key == "" || len(key) > MaxKeyLength {
		return nil, false, errs.New(errs.InvalidRequest, "request_key: 1 to %d bytes, got %d", MaxKeyLength, len(key))
	}
	sum := sha256.Sum256([]byte(key))
	name := "mcp-" + hex.EncodeToString(sum[:])
	locked, err := k.lock(ctx, sum[0])
	if err != nil {
		return nil, false, err
	}
	unlock := sync.OnceFunc(locked)
	defer unlock()
	if data, err := k.recs.Get(ctx, name); err == nil {
		rec, err := readKeyRecord(data)
		if err != nil {
			return nil, false, err
		}
		if rec.Tool != tool || rec.Digest != dig {
			return nil, false, conflict(rec)
		}
		if !rec.Done {
			if rec.Host != "" && rec.Host != k.host {
				unlock() // what this host does with other keys of the stripe need not wait too
				return k.awaitOther(ctx, name, tool, dig)
			}
			// Its lock is ours: the request that wrote this ended with its process.
			return nil, false, errs.New(errs.RunUnavailable, "request_key: the first %s request with this key did not end (its server stopped); what it did is unknown", tool).
				Because("mcp", "request_outcome_unknown", "unknown", errs.Uncertain).
				Next("look for what it did with the audit, status and inspect tools; send a new request_key for new intent")
		}
		return replay(rec), true, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, false, err
	}
	pending, _ := json.Marshal(keyRecord{At: time.Now().UTC(), Tool: tool, Digest: dig, Host: k.host})
	if err := k.recs.Create(ctx, name, pending); errors.Is(err, store.ErrExists) {
		// A server of another host took the key since: its request is the one.
		unlock()
		return k.awaitOther(ctx, name, tool, dig)
	} else if err != nil {
		return nil, false, err
	}
	res = run()
	if res.IsError && errorCode(res) == string(errs.InvalidRequest) {
		_ = k.recs.Delete(context.WithoutCancel(ctx), name)
		return res, false, nil
	}
	result, _ := json.Marshal(res.StructuredContent)
	done, _ := json.Marshal(keyRecord{At: time.Now().UTC(), Tool: tool, Digest: dig, Done: true, IsError: res.IsError, Result: result})
	if err := k.recs.Put(context.WithoutCancel(ctx), name, done); err != nil {
		// Done, but not kept: a request with this key again finds it undone.
		return res, false, nil
	}
	if sum[1] < 4 { // now and then: keep within MaxKeys
		k.prune(context.WithoutCancel(ctx))
	}
	return res, false, nil
}

// readKeyRecord reads a key's record.
func readKeyRecord(data []byte) (keyRecord, error) {
	var rec keyRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, errs.New(errs.IncompatibleSchema, "request_key: its record cannot be read").Wrap(err).
			Because("mcp", "key_record_damaged", "not_started", errs.Certain).Next("send the request with a new request_key")
	}
	return rec, nil
}

func conflict(rec keyRecord) error {
	return errs.New(errs.IdempotencyConflict, "request_key was used at %s for another %s request", rec.At.Format(time.RFC3339), rec.Tool)
}

// replay is the answer a key's first request gave.
func replay(rec keyRecord) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: rec.IsError, StructuredContent: rec.Result,
		Content: []mcp.Content{&mcp.TextContent{Text: string(rec.Result)}}}
}

// awaitOther waits for the request a server of another host does under the key's record name
// to end, and gives its answer; past k.wait what that request did is unknown (its server may
// have stopped: no lock of this host tells).
func (k *Keys) awaitOther(ctx context.Context, name, tool, dig string) (*mcp.CallToolResult, bool, error) {
	deadline := time.Now().Add(k.wait)
	for {
		data, err := k.recs.Get(ctx, name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			// Its request was refused as invalid and let the key go: this one is refused alike.
			return nil, false, errs.New(errs.RunUnavailable, "request_key: the first %s request with this key, on another host, did nothing; send the request again", tool).
				Because("mcp", "request_pending", "not_started", errs.Certain).Next("send the same request again")
		case err != nil:
			return nil, false, err
		}
		rec, err := readKeyRecord(data)
		if err != nil {
			return nil, false, err
		}
		if rec.Tool != tool || rec.Digest != dig {
			return nil, false, conflict(rec)
		}
		if rec.Done {
			return replay(rec), true, nil
		}
		if !time.Now().Before(deadline) {
			return nil, false, errs.New(errs.RunUnavailable, "request_key: the first %s request with this key, on host %s, has not ended within %s; what it did is unknown", tool, rec.Host, k.wait).
				Because("mcp", "request_outcome_unknown", "unknown", errs.Uncertain).
				Next("look for what it did with the audit, status and inspect tools; send a new request_key for new intent")
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lock takes the flock of a stripe of the keys, waiting for it as long as ctx and keyWait let.
func (k *Keys) lock(ctx context.Context, stripe byte) (unlock func(), err error) {
	if err := os.MkdirAll(k.locks, 0o700); err != nil {
		return nil, errs.New(errs.CapabilityUnavailable, "request keys: %s cannot be made", k.locks).Wrap(err).
			Because("mcp", "store_unwritable", "not_started", errs.Certain)
	}
	path := filepath.Join(k.locks, fmt.Sprintf("%02x.lock", stripe))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, errs.New(errs.CapabilityUnavailable, "request keys: %s cannot be opened", path).Wrap(err).
			Because("mcp", "store_unwritable", "not_started", errs.Certain)
	}
	deadline := time.Now().Add(keyWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || !time.Now().Before(deadline) {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, errs.New(errs.RunUnavailable, "request_key: another request with this key, or one that shares its lock, has not ended within %s", keyWait).
					Because("mcp", "request_pending", "not_started", errs.Certain).Next("send the same request again later")
			}
			return nil, errs.New(errs.CapabilityUnavailable, "request keys: %s cannot be locked", path).Wrap(err).
				Because("mcp", "store_unwritable", "not_started", errs.Certain)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// prune lets the oldest keys go past MaxKeys.
func (k *Keys) prune(ctx context.Context) {
	all, err := k.recs.List(ctx, "mcp-")
	if err != nil || len(all) <= MaxKeys {
		return
	}
	type aged struct {
		key string
		at  time.Time
	}
	byAge := make([]aged, 0, len(all))
	for _, r := range all {
		var rec keyRecord
		_ = json.Unmarshal(r.Value, &rec)
		byAge = append(byAge, aged{r.Key, rec.At})
	}
	slices.SortFunc(byAge, func(a, b aged) int { return a.at.Compare(b.at) })
	for _, a := range byAge[:len(byAge)-MaxKeys] {
		_ = k.recs.Delete(ctx, a.key)
	}
}

// errorCode is the code of a failed call's answer.
func errorCode(res *mcp.CallToolResult) string {
	code, _ := wire.Failure(res)
	return code
}
