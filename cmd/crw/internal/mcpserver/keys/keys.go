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

// Keys are the request keys of mutations, kept as records of the state folder
// (store.KindIdempotency), so they outlive the server. A key's first request is done under a
// lock of its stripe (<state>/mcp/locks/, a flock: it is let go when its process dies), so a
// request with the same key, in this process or another, waits for it to end and then gets its
// result.
type Keys struct {
	recs  store.Records
	locks string
}

// New keeps keys in recs, locking their stripes in the folder locks.
func New(recs store.Records, locks string) *Keys {
	return &Keys{recs: recs, locks: locks}
}

// keyRecord is what a key's record holds: the request it was first used for (its tool and the
// digest of its arguments) and what that request answered once it ended.
type keyRecord struct {
	At      time.Time       `json:"at"`
	Tool    string          `json:"tool"`
	Digest  string          `json:"digest"`
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
	unlock, err := k.lock(ctx, sum[0])
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	if data, err := k.recs.Get(ctx, name); err == nil {
		var rec keyRecord
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, false, errs.New(errs.IncompatibleSchema, "request_key: its record cannot be read").Wrap(err).
				Because("mcp", "key_record_damaged", "not_started", errs.Certain).Next("send the request with a new request_key")
		}
		if rec.Tool != tool || rec.Digest != dig {
			return nil, false, errs.New(errs.IdempotencyConflict, "request_key was used at %s for another %s request", rec.At.Format(time.RFC3339), rec.Tool)
		}
		if !rec.Done {
			// Its lock is ours: the request that wrote this ended with its process.
			return nil, false, errs.New(errs.RunUnavailable, "request_key: the first %s request with this key did not end (its server stopped); what it did is unknown", tool).
				Because("mcp", "request_outcome_unknown", "unknown", errs.Uncertain).
				Next("look for what it did with the audit, status and inspect tools; send a new request_key for new intent")
		}
		return &mcp.CallToolResult{IsError: rec.IsError, StructuredContent: rec.Result,
			Content: []mcp.Content{&mcp.TextContent{Text: string(rec.Result)}}}, true, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, false, err
	}
	pending, _ := json.Marshal(keyRecord{At: time.Now().UTC(), Tool: tool, Digest: dig})
	if err := k.recs.Put(ctx, name, pending); err != nil {
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
