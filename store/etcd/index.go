package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/etcd/etcdrpc"
)

// The summary's index (journal.Index) lives in keys of its own beside the summary, one per
// call and list: calls/<call> (the call's state), open/<call>, unknown/<call> and
// verdicts/<seq>. A commit transaction puts and deletes those its rows changed, with the rows
// and the summary, so no value grows with the run's calls. The holder caches the entries it
// read or wrote (every one, for a journal it found empty), so a commit reads none it knows.

// callOpen is a call's state while its newest attempt has no terminal row.
const callOpen = "open"

// maxCached is how many calls' entries a holder keeps before it forgets those of calls that
// are neither open nor unknown (read again if a row names them).
const maxCached = 20000

// maxRowIndexOps bounds the index operations one row's fold adds to a transaction: its call's
// state, open and unknown keys, and a verdict with its call's unknown key.
const maxRowIndexOps = 5

// loadCalls is how many calls' entries one read transaction asks for (three keys each).
const loadCalls = maxTxnOps / 3

// callEntry is what the index keeps of one call.
type callEntry struct {
	state   string // "" never prepared; callOpen; or the status of its newest attempt
	open    *journal.OpenCall
	unknown *journal.UnknownCall
}

// index is the holder's cache of the run's index, as committed.
type index struct {
	cli      *etcdrpc.Client
	keys     keys
	calls    map[string]*callEntry
	complete bool // every call the index has is in calls (a journal found empty, nothing forgotten)
	// retry runs a read again while its failure may pass (Holding.retry).
	retry func(ctx context.Context, op func() error) error
}

// load reads the entries of the calls the parts name that are not cached.
func (x *index) load(ctx context.Context, parts []journal.SummaryPart) error {
	if x.complete {
		return nil
	}
	var missing []string
	seen := map[string]bool{}
	add := func(call string) {
		if call != "" && !seen[call] && x.calls[call] == nil {
			seen[call] = true
			missing = append(missing, call)
		}
	}
	for i := range parts {
		add(parts[i].Call)
		if p := parts[i].Index; p != nil && p.Verdict != nil {
			add(p.Verdict.Call)
		}
	}
	for len(missing) > 0 {
		n := min(len(missing), loadCalls)
		if err := x.read(ctx, missing[:n]); err != nil {
			return err
		}
		missing = missing[n:]
	}
	return nil
}

// read reads calls' entries in one transaction and caches them.
func (x *index) read(ctx context.Context, calls []string) error {
	ops := make([]etcdrpc.Op, 0, 3*len(calls))
	for _, c := range calls {
		ops = append(ops, etcdrpc.OpGet(x.keys.call(c)), etcdrpc.OpGet(x.keys.open(c)), etcdrpc.OpGet(x.keys.unknown(c)))
	}
	var resp *etcdrpc.TxnResponse
	err := x.retry(ctx, func() (err error) {
		resp, err = x.cli.Txn(ctx).Then(ops...).Commit()
		return err
	})
	if err != nil {
		return errs.New(errs.RunUnavailable, "journal: the index could not be read").Wrap(err)
	}
	for i, c := range calls {
		e := &callEntry{}
		if kvs := resp.Responses[3*i].GetResponseRange().Kvs; len(kvs) > 0 {
			e.state = string(kvs[0].Value)
		}
		if kvs := resp.Responses[3*i+1].GetResponseRange().Kvs; len(kvs) > 0 {
			e.open = &journal.OpenCall{}
			if err := json.Unmarshal(kvs[0].Value, e.open); err != nil {
				return errs.New(errs.IncompatibleSchema, "journal: index: open call %.64q does not read", c).Wrap(err)
			}
		}
		if kvs := resp.Responses[3*i+2].GetResponseRange().Kvs; len(kvs) > 0 {
			e.unknown = &journal.UnknownCall{}
			if err := json.Unmarshal(kvs[0].Value, e.unknown); err != nil {
				return errs.New(errs.IncompatibleSchema, "journal: index: unknown call %.64q does not read", c).Wrap(err)
			}
		}
		x.calls[c] = e
	}
	return nil
}

// The parts of a call's entry a stage changed.
const (
	dirtyState = 1 << iota
	dirtyOpen
	dirtyUnknown
)

// stage is the index as one commit transaction's fold changes it: journal.Index over the
// cache, its changes kept apart until the transaction succeeds (apply).
type stage struct {
	ctx      context.Context
	x        *index
	calls    map[string]*callEntry
	dirty    map[string]int
	verdicts []journal.Verdict
	ops      int
}

func (x *index) stage(ctx context.Context) *stage {
	return &stage{ctx: ctx, x: x, calls: map[string]*callEntry{}, dirty: map[string]int{}}
}

var _ journal.Index = (*stage)(nil)

// entry is the call's staged entry, copied from the cache (read first, if need be).
func (s *stage) entry(call string) (*callEntry, error) {
	if e := s.calls[call]; e != nil {
		return e, nil
	}
	e := s.x.calls[call]
	if e == nil && !s.x.complete {
		if err := s.x.read(s.ctx, []string{call}); err != nil {
			return nil, err
		}
		e = s.x.calls[call]
	}
	cp := &callEntry{}
	if e != nil {
		*cp = *e
	}
	s.calls[call] = cp
	return cp, nil
}

func (s *stage) mark(call string, bit int) {
	if s.dirty[call]&bit == 0 {
		s.dirty[call] |= bit
		s.ops++
	}
}

// CallState implements journal.Index.
func (s *stage) CallState(call string) (bool, journal.CallStatus, error) {
	e, err := s.entry(call)
	if err != nil || e.state == "" {
		return false, "", err
	}
	if e.state == callOpen {
		return true, "", nil
	}
	return true, journal.CallStatus(e.state), nil
}

// SetCallState implements journal.Index.
func (s *stage) SetCallState(call string, status journal.CallStatus) error {
	e, err := s.entry(call)
	if err != nil {
		return err
	}
	e.state = string(status)
	if status == "" {
		e.state = callOpen
	}
	s.mark(call, dirtyState)
	return nil
}

func cloneOpen(o *journal.OpenCall) *journal.OpenCall {
	if o == nil {
		return nil
	}
	cp := *o
	cp.Turns = slices.Clone(o.Turns)
	return &cp
}

func cloneUnknown(u *journal.UnknownCall) *journal.UnknownCall {
	if u == nil {
		return nil
	}
	cp := *u
	cp.Turns = slices.Clone(u.Turns)
	return &cp
}

// Open implements journal.Index.
func (s *stage) Open(call string) (*journal.OpenCall, error) {
	e, err := s.entry(call)
	if err != nil {
		return nil, err
	}
	return cloneOpen(e.open), nil
}

// SetOpen implements journal.Index.
func (s *stage) SetOpen(call string, o *journal.OpenCall) error {
	e, err := s.entry(call)
	if err != nil {
		return err
	}
	e.open = cloneOpen(o)
	s.mark(call, dirtyOpen)
	return nil
}

// Unknown implements journal.Index.
func (s *stage) Unknown(call string) (*journal.UnknownCall, error) {
	e, err := s.entry(call)
	if err != nil {
		return nil, err
	}
	return cloneUnknown(e.unknown), nil
}

// SetUnknown implements journal.Index.
func (s *stage) SetUnknown(call string, u *journal.UnknownCall) error {
	e, err := s.entry(call)
	if err != nil {
		return err
	}
	e.unknown = cloneUnknown(u)
	s.mark(call, dirtyUnknown)
	return nil
}

// AddVerdict implements journal.Index.
func (s *stage) AddVerdict(v journal.Verdict) error {
	s.verdicts = append(s.verdicts, v)
	s.ops++
	return nil
}

// txnOps are the puts and deletes of what the stage changed.
func (s *stage) txnOps() ([]etcdrpc.Op, error) {
	ops := make([]etcdrpc.Op, 0, s.ops)
	k := s.x.keys
	for call, bits := range s.dirty {
		e := s.calls[call]
		if bits&dirtyState != 0 {
			ops = append(ops, etcdrpc.OpPut(k.call(call), e.state))
		}
		if bits&dirtyOpen != 0 {
			op, err := putJSON(k.open(call), e.open)
			if err != nil {
				return nil, err
			}
			ops = append(ops, op)
		}
		if bits&dirtyUnknown != 0 {
			op, err := putJSON(k.unknown(call), e.unknown)
			if err != nil {
				return nil, err
			}
			ops = append(ops, op)
		}
	}
	for i := range s.verdicts {
		op, err := putJSON(k.verdict(s.verdicts[i].Seq), &s.verdicts[i])
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// putJSON puts v's JSON under key, or deletes key when v is nil.
func putJSON[T any](key string, v *T) (etcdrpc.Op, error) {
	if v == nil {
		return etcdrpc.OpDelete(key), nil
	}
	data, err := journal.MarshalPlain(v)
	if err != nil {
		return etcdrpc.Op{}, fmt.Errorf("journal: index: %w", err)
	}
	return etcdrpc.OpPut(key, string(data)), nil
}

// apply makes the stage's changes the cache's, once its transaction succeeded.
func (s *stage) apply() {
	for call, e := range s.calls {
		s.x.calls[call] = e
	}
	if len(s.x.calls) > maxCached {
		for call, e := range s.x.calls {
			if e.open == nil && e.unknown == nil {
				delete(s.x.calls, call)
			}
		}
		s.x.complete = false
	}
}
