package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store"
)

// AuditEntry is one mutation a command made: what, of which run, by whom, when, and how it
// ended (ok, or the error's code and message).
type AuditEntry struct {
	At     time.Time `json:"at"`
	Op     string    `json:"op"`
	Run    string    `json:"run,omitempty"`
	Who    string    `json:"who"`
	Result string    `json:"result"`
	Detail string    `json:"detail,omitempty"`
}

// MaxAudit bounds the audit the store keeps: past it the oldest entries go.
const MaxAudit = 10000

// Audit records a mutation in the store's audit (KindAudit of the store's own records). It
// never fails the mutation it records: a record that cannot be written is let go.
func (s *Service) Audit(ctx context.Context, e AuditEntry) {
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	if len(e.Detail) > 1024 {
		e.Detail = e.Detail[:1024] + "…"
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	key := e.At.Format("20060102T150405.000000000") + "-" + hex.EncodeToString(r[:])
	value, err := json.Marshal(e)
	if err != nil {
		return
	}
	recs := s.Store.Records("", store.KindAudit)
	if recs.Create(ctx, key, value) != nil {
		return
	}
	if r[0] < 4 { // now and then: keep the audit within MaxAudit
		if all, err := recs.List(ctx, ""); err == nil && len(all) > MaxAudit {
			for _, old := range all[:len(all)-MaxAudit] {
				_ = recs.Delete(ctx, old.Key)
			}
		}
	}
}

// AuditLog returns the newest limit entries of the audit (of one run when run is not ""),
// oldest first.
func (s *Service) AuditLog(ctx context.Context, run string, limit int) ([]AuditEntry, error) {
	if limit < 1 || limit > MaxAudit {
		return nil, errs.Field("limit", "", "1 to %d, got %d", MaxAudit, limit)
	}
	all, err := s.Store.Records("", store.KindAudit).List(ctx, "")
	if err != nil {
		return nil, err
	}
	out := []AuditEntry{}
	for i := len(all) - 1; i >= 0 && len(out) < limit; i-- {
		var e AuditEntry
		if json.Unmarshal(all[i].Value, &e) != nil || (run != "" && e.Run != run) {
			continue
		}
		out = append(out, e)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// Audited lists the commands whose runs are mutations the audit records.
var Audited = map[string]bool{"run": true, "start": true, "resume": true, "cancel": true, "answer": true, "recover": true,
	"delete": true, "prune": true, "dispatched": true, "setup": true}

// AuditResult is how a mutation ended, for its entry.
func AuditResult(err error) (result, detail string) {
	if err == nil {
		return "ok", ""
	}
	if e, ok := errs.As(err); ok {
		return string(e.Code), strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(e.Error(), string(e.Code)), ":"))
	}
	return "error", err.Error()
}
