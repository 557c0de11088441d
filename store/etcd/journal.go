// Package etcd keeps crw's runs on an etcd cluster (docs/scale-out.md): Open returns a
// store.Store under a key prefix. A run is held through an etcd lease and an owner key bound
// to it (Hold), and every commit of the journal is a transaction conditioned on that owner
// key's create revision, so a process that lost its lease (paused, partitioned, stopped past
// its TTL) can never write another row, even when it wakes up later: the next holder's owner
// key has another create revision. The same transaction writes the journal's summary and the
// index entries its rows changed.
//
// It is over 1,500 lines because it is the whole store contract on etcd (runs, leases, the
// journal with its summary and index, records, logs, files, watches), each part written
// against the same key layout and holding condition; reaching a cluster (package cluster) and
// values larger than one etcd value (package chunks) live apart.
package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/etcd/chunks"
	"github.com/crw-dev/crw/store/etcd/etcdrpc"
)

// Limits of one commit transaction, within etcd's defaults (--max-txn-ops 128,
// --max-request-bytes 1.5 MiB): a batch past them is committed as several transactions, each
// conditioned on the holding, in seq order. A transaction's operations are its rows, the
// index keys their fold changed and the summary; its rows take at most 1 MiB, which leaves
// the index and the summary half a megabyte. A row past 512 KiB is stored in chunks, each put
// by a transaction of its own (chunks.go), and its key holds a reference to them.
const (
	maxTxnOps   = 128
	maxTxnRows  = 100
	maxTxnBytes = 1 << 20
	// MaxRowBytes is the largest row a journal takes: 256 chunks, past the largest prompt a
	// run may be given (store.MaxPromptBytes).
	MaxRowBytes = 256 << 20
)

// maxRow is MaxRowBytes, which a test makes smaller.
var maxRow = MaxRowBytes

// keys are a run's keys under the store's prefix.
type keys struct{ run string }

func runKeys(prefix, run string) keys { return keys{run: prefix + "/runs/" + run + "/"} }

// owner is the key of the run's holder, bound to its lease: its create revision names the holding.
func (k keys) owner() string { return k.run + "owner" }

// rows is the prefix of the journal's rows; row is one row's key, its seq in fixed-width hex
// so the keys sort in seq order.
func (k keys) rows() string          { return k.run + "rows/" }
func (k keys) row(seq uint64) string { return k.rows() + fmt.Sprintf("%016x", seq) }

// summary is the journal's summary, rewritten by every commit transaction; call, open,
// unknown and verdict are its index's entries (index.go).
func (k keys) summary() string            { return k.run + "summary" }
func (k keys) call(id string) string      { return k.run + "calls/" + id }
func (k keys) opens() string              { return k.run + "open/" }
func (k keys) open(id string) string      { return k.opens() + id }
func (k keys) unknowns() string           { return k.run + "unknown/" }
func (k keys) unknown(id string) string   { return k.unknowns() + id }
func (k keys) verdicts() string           { return k.run + "verdicts/" }
func (k keys) verdict(seq uint64) string  { return k.verdicts() + fmt.Sprintf("%016x", seq) }
func (k keys) spec() string               { return k.run + "spec" }
func (k keys) status() string             { return k.run + "status" }
func (k keys) cancel() string             { return k.run + "cancel" }
func (k keys) answers() string            { return k.run + "answers/" }
func (k keys) records(kind string) string { return k.run + "records/" + kind + "/" }
func (k keys) log() string                { return k.run + "log/" }

// Holding is a run held by this process: its lease, kept alive while the process lives, and
// the owner key whose create revision every commit is conditioned on.
type Holding struct {
	cli   *etcdrpc.Client
	run   string
	keys  keys
	lease etcdrpc.LeaseID
	rev   int64 // the owner key's create revision
	token string

	stopKeepAlive context.CancelFunc
	lostOnce      sync.Once
	lost          chan struct{}
	j             *Journal
}

// Hold takes run's holding for ttl (kept alive while the process lives, lost when it has not
// been for ttl): run_unavailable (store.ErrHeld) when another process holds it.
func Hold(ctx context.Context, cli *etcdrpc.Client, prefix, run string, ttl time.Duration) (*Holding, error) {
	h, _, err := hold(ctx, cli, runKeys(prefix, run), run, ttl, nil)
	return h, err
}

// errNoRun: the holding was refused because a condition of the caller's failed.
var errNoRun = errors.New("no such run")

// hold is Hold, the owner key created only if the conditions also hold (errNoRun otherwise);
// the same transaction reads the journal's summary and last row and the run's cancel request,
// which it returns.
func hold(ctx context.Context, cli *etcdrpc.Client, k keys, run string, ttl time.Duration, conds []etcdrpc.Cmp) (*Holding, *etcdrpc.KeyValue, error) {
	grant, err := cli.Grant(ctx, max(1, int64(ttl/time.Second)))
	if err != nil {
		return nil, nil, errs.New(errs.RunUnavailable, "run %s: the etcd cluster gave no lease", run).Wrap(err)
	}
	token := strconv.FormatInt(int64(grant.ID), 16)
	free := etcdrpc.Compare(etcdrpc.CreateRevision(k.owner()), "=", 0)
	resp, err := cli.Txn(ctx).
		If(append(slices.Clone(conds), free)...).
		Then(etcdrpc.OpPut(k.owner(), token, etcdrpc.WithLease(grant.ID)),
			etcdrpc.OpGet(k.summary()),
			etcdrpc.OpGet(k.rows(), append([]etcdrpc.OpOption{etcdrpc.WithKeysOnly()}, etcdrpc.WithLastKey()...)...),
			etcdrpc.OpGet(k.cancel())).
		Else(etcdrpc.OpTxn([]etcdrpc.Cmp{free}, nil, nil)).
		Commit()
	if err != nil {
		_, _ = cli.Revoke(context.WithoutCancel(ctx), grant.ID)
		return nil, nil, errs.New(errs.RunUnavailable, "run %s: the etcd cluster did not answer", run).Wrap(err)
	}
	if !resp.Succeeded {
		_, _ = cli.Revoke(context.WithoutCancel(ctx), grant.ID)
		if resp.Responses[0].GetResponseTxn().Succeeded {
			return nil, nil, errNoRun
		}
		return nil, nil, errs.New(errs.RunUnavailable, "run %s is held by another live process", run).Wrap(store.ErrHeld)
	}
	h := &Holding{cli: cli, run: run, keys: k, lease: grant.ID, rev: resp.Header.Revision, token: token, lost: make(chan struct{})}
	keepCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	h.stopKeepAlive = stop
	alive, err := cli.KeepAlive(keepCtx, grant.ID)
	if err != nil {
		stop()
		_, _ = cli.Revoke(context.WithoutCancel(ctx), grant.ID)
		return nil, nil, errs.New(errs.RunUnavailable, "run %s: the etcd lease cannot be kept alive", run).Wrap(err)
	}
	go func() {
		for range alive { // the channel closes when the lease can no longer be kept alive
		}
		h.lose()
	}()
	h.j = &Journal{h: h}
	sum, last, err := journalState(k, resp.Responses[1].GetResponseRange().Kvs, resp.Responses[2].GetResponseRange().Kvs)
	if err != nil {
		h.release(ctx)
		return nil, nil, err
	}
	h.j.next, h.j.durable, h.j.sum = last, last, sum
	// A journal found empty has no index entry this holder does not make.
	h.j.idx = &index{cli: cli, keys: k, calls: map[string]*callEntry{}, complete: last == 0, retry: h.retry}
	var cancel *etcdrpc.KeyValue
	if kvs := resp.Responses[3].GetResponseRange().Kvs; len(kvs) > 0 {
		cancel = kvs[0]
	}
	return h, cancel, nil
}

// journalState is the journal's summary and last seq, as its summary key and last row key
// read; they must agree.
func journalState(k keys, summary, last []*etcdrpc.KeyValue) (*journal.Summary, uint64, error) {
	var seq uint64
	if len(last) > 0 {
		key := string(last[0].Key)
		hex, err := under(last[0].Key, k.rows())
		if err == nil {
			seq, err = strconv.ParseUint(hex, 16, 64)
		}
		if err != nil || key != k.row(seq) {
			return nil, 0, errs.New(errs.IncompatibleSchema, "journal: the key %q is no row's", key)
		}
	}
	sum, err := decodeSummary(summary)
	if err != nil {
		return nil, 0, err
	}
	if sum.LastSeq != seq {
		return nil, 0, errs.New(errs.IncompatibleSchema, "journal: the summary covers the rows to %d but the rows end at %d", sum.LastSeq, seq)
	}
	return sum, seq, nil
}

// decodeSummary reads a summary key (an empty journal's when there is none).
func decodeSummary(kvs []*etcdrpc.KeyValue) (*journal.Summary, error) {
	sum := journal.NewSummary()
	if len(kvs) == 0 {
		return sum, nil
	}
	if err := json.Unmarshal(kvs[0].Value, sum); err != nil {
		return nil, errs.New(errs.IncompatibleSchema, "journal: the summary does not read").Wrap(err)
	}
	if sum.Calls == nil {
		sum.Calls = map[journal.CallStatus]int{}
	}
	return sum, nil
}

// Token names the holding: its lease's id.
func (h *Holding) Token() string { return h.token }

// Journal is the run's journal as this holding writes it.
func (h *Holding) Journal() *Journal { return h.j }

// Lost is closed once the holding is lost: its lease expired or was revoked, or a commit
// found another owner. The journal then refuses every write.
func (h *Holding) Lost() <-chan struct{} { return h.lost }

func (h *Holding) lose() {
	h.lostOnce.Do(func() {
		h.j.fence(fmt.Errorf("journal: %w", store.ErrLeaseLost))
		close(h.lost)
	})
}

// Release commits what the journal buffered (unless it was fenced) and lets the run go.
func (h *Holding) Release(ctx context.Context) error {
	err := h.j.close(ctx)
	h.release(ctx)
	return err
}

// crash ends the holding as a process killed now would: nothing more is written, and the lease
// is revoked (the owner key deleted), as its expiry would, at once.
func (h *Holding) crash() {
	h.lose()
	h.stopKeepAlive()
	_, _ = h.cli.Revoke(context.Background(), h.lease)
}

func (h *Holding) release(ctx context.Context) {
	h.stopKeepAlive()
	// Revoking the lease deletes the owner key: the run is free at once, not after the TTL.
	_, _ = h.cli.Revoke(context.WithoutCancel(ctx), h.lease)
	h.lose()
}

// Journal is a run's journal on etcd, as its holder writes it: appended rows wait in memory
// until a commit, a transaction conditioned on the holding (several, in seq order, for a batch
// past one transaction's limits). A commit whose outcome etcd did not say (no leader, a lost
// connection) may have been applied: it is sent again, on the condition that its first row is
// not there yet, until it is or is found applied, the holding is lost, or retryMost has passed
// (then the journal takes no more rows, and a resume reads what is there).
type Journal struct {
	h        *Holding
	commitMu sync.Mutex // one commit at a time, in seq order
	mu       sync.Mutex
	next     uint64
	durable  uint64
	pending  [][]byte
	parts    []journal.SummaryPart // what the summary's fold reads of the pending rows
	err      error
	closed   bool

	// What the commits fold the rows into, as committed (guarded by commitMu).
	sum *journal.Summary
	idx *index
	// afterTxn, when set (by a test), is called after each commit transaction that succeeded.
	afterTxn func(last uint64)
	// crashAfter ends the holding after this many commits (Store.CrashAfterCommit); commits
	// counts them (guarded by commitMu).
	crashAfter, commits uint64
}

var _ store.Journal = (*Journal)(nil)

// Append implements store.Journal.
func (j *Journal) Append(rows ...*journal.Row) uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil || j.closed {
		return 0
	}
	now := time.Now().UTC()
	for _, r := range rows {
		r.Seq = j.next + 1
		if r.At.IsZero() {
			r.At = now
		}
		data, err := journal.Encode(r)
		if err == nil && len(data) > maxRow {
			err = fmt.Errorf("%d bytes, past the %d an etcd journal's row may take", len(data), maxRow)
		}
		if err != nil {
			j.err = fmt.Errorf("journal: row %d (%s): %w", r.Seq, r.Type, err)
			j.pending, j.parts = nil, nil
			return 0
		}
		j.next++
		j.pending = append(j.pending, data)
		j.parts = append(j.parts, r.ForSummary())
	}
	return j.next
}

// Sync implements store.Journal.
func (j *Journal) Sync(seq uint64) error {
	j.commitMu.Lock()
	defer j.commitMu.Unlock()
	j.mu.Lock()
	switch {
	case j.err != nil:
		err := j.err
		j.mu.Unlock()
		return err
	case seq <= j.durable:
		j.mu.Unlock()
		return nil
	case seq > j.next:
		j.mu.Unlock()
		return fmt.Errorf("journal: sync %d: only %d rows were appended", seq, j.next)
	}
	batch, parts, first := j.pending, j.parts, j.durable+1
	j.pending, j.parts = nil, nil
	j.mu.Unlock()
	return j.commit(context.Background(), batch, parts, first)
}

// commit writes batch, whose first row has seq first, in transactions conditioned on the
// holding. Each transaction folds its own rows into the summary and the index and writes them
// with the rows, so what is committed of a batch split in several is always summarized.
func (j *Journal) commit(ctx context.Context, batch [][]byte, parts []journal.SummaryPart, first uint64) error {
	for len(batch) > 0 {
		if err := j.idx.load(ctx, parts[:min(len(parts), maxTxnRows)]); err != nil {
			j.fence(fmt.Errorf("journal: rows %d on were not committed: %w", first, err))
			return j.failed()
		}
		st, sum := j.idx.stage(ctx), j.sum.Clone()
		n, size := 0, 0
		for n < len(batch) && n < maxTxnRows {
			if n > 0 && (size+chunks.Stored(batch[n]) > maxTxnBytes || n+1+st.ops+1+maxRowIndexOps > maxTxnOps) {
				break
			}
			if err := sum.Add(parts[n], st); err != nil {
				j.fence(fmt.Errorf("journal: rows %d on were not committed: %w", first, err))
				return j.failed()
			}
			size += chunks.Stored(batch[n])
			n++
		}
		index, err := st.txnOps()
		var sumData []byte
		if err == nil {
			sumData, err = journal.MarshalPlain(sum)
		}
		if err != nil {
			j.fence(fmt.Errorf("journal: rows %d on were not committed: %w", first, err))
			return j.failed()
		}
		ops := make([]etcdrpc.Op, 0, n+len(index)+1)
		for i := range n {
			value := string(batch[i])
			if chunks.Chunked(batch[i]) {
				ref, held, err := j.putRowChunks(ctx, first+uint64(i), batch[i])
				switch {
				case err != nil:
					j.fence(fmt.Errorf("journal: the chunks of row %d have no known outcome: %w", first+uint64(i), err))
					return j.failed()
				case !held:
					j.h.lose()
					return j.failed()
				}
				value = ref
			}
			ops = append(ops, etcdrpc.OpPut(j.h.keys.row(first+uint64(i)), value))
		}
		ops = append(ops, index...)
		ops = append(ops, etcdrpc.OpPut(j.h.keys.summary(), string(sumData)))
		// The transaction also needs its first row's key to be new: one whose outcome etcd did
		// not say is sent again, and whichever of the two comes second (the first delivered
		// late, after a partition healed) changes nothing.
		firstKey := j.h.keys.row(first)
		var resp *etcdrpc.TxnResponse
		err = j.h.retry(ctx, func() (err error) {
			resp, err = j.h.cli.Txn(ctx).
				If(etcdrpc.Compare(etcdrpc.CreateRevision(j.h.keys.owner()), "=", j.h.rev),
					etcdrpc.Compare(etcdrpc.Version(firstKey), "=", 0)).
				Then(ops...).
				Else(etcdrpc.OpGet(j.h.keys.owner()), etcdrpc.OpGet(firstKey)).
				Commit()
			return err
		})
		if err != nil {
			// Applied or not, etcd did not say: nothing more is written.
			j.fence(fmt.Errorf("journal: the commit of rows %d to %d has no known outcome: %w", first, first+uint64(n)-1, err))
			return j.failed()
		}
		if !resp.Succeeded {
			owner, row := resp.Responses[0].GetResponseRange().Kvs, resp.Responses[1].GetResponseRange().Kvs
			switch {
			case len(owner) == 0 || owner[0].CreateRevision != j.h.rev:
				j.h.lose() // another process holds the run: this one's lease had expired
				return j.failed()
			case len(row) == 0 || string(row[0].Value) != string(ops[0].ValueBytes()):
				j.fence(fmt.Errorf("journal: row %d was written by another commit than this holder's", first))
				return j.failed()
			}
			// This holder's own transaction, sent before, was applied: the rows are committed.
		}
		st.apply()
		j.sum = sum
		j.mu.Lock()
		j.durable = first + uint64(n) - 1
		j.mu.Unlock()
		if j.afterTxn != nil {
			j.afterTxn(first + uint64(n) - 1)
		}
		if j.commits++; j.crashAfter != 0 && j.commits == j.crashAfter {
			j.h.crash()
			if len(batch) > n {
				return j.failed() // the batch's later transactions are never sent
			}
			return nil
		}
		batch, parts, first = batch[n:], parts[n:], first+uint64(n)
	}
	return nil
}

// retryMost bounds how long a holder tries an operation whose failure etcd says may pass (no
// leader, a member gone, a connection lost): its lease outlives that only when the cluster
// keeps answering its keepalives but not its requests.
const retryMost = time.Minute

// retry runs op until it succeeds, fails in a way that does not pass, or the holding is lost;
// an error that passes is retried after 50 ms, twice that after another, up to a second, for
// retryMost at most; then op's last error is ErrUnreachable's.
func (h *Holding) retry(ctx context.Context, op func() error) error {
	deadline := time.Now().Add(retryMost)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := op()
		if err == nil || !passes(err) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %w", store.ErrUnreachable, err)
		}
		select {
		case <-h.lost:
			return fmt.Errorf("%w: %w", store.ErrLeaseLost, err)
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// passes tells whether an etcd request's failure may pass: the cluster had no leader, changed
// it, timed out or could not be reached. Such a request may have been applied.
func passes(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	code := etcdrpc.CodeOf(err)
	return code == etcdrpc.CodeUnavailable || code == etcdrpc.CodeDeadlineExceeded
}

func (j *Journal) failed() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// Write implements store.Journal.
func (j *Journal) Write(rows ...*journal.Row) (uint64, error) {
	seq := j.Append(rows...)
	if seq == 0 && len(rows) > 0 {
		j.mu.Lock()
		err := j.err
		if err == nil {
			err = errors.New("journal: closed")
		}
		j.mu.Unlock()
		return 0, err
	}
	return seq, j.Sync(seq)
}

// LastSeq implements store.Journal.
func (j *Journal) LastSeq() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.next
}

// DurableSeq implements store.Journal.
func (j *Journal) DurableSeq() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.durable
}

// Rows implements store.Journal.
func (j *Journal) Rows() ([]journal.Row, error) { return j.Page(1, 0) }

// Page implements store.Journal.
func (j *Journal) Page(from uint64, limit int) ([]journal.Row, error) {
	var rows []journal.Row
	err := j.Each(from, limit, func(r *journal.Row) error {
		rows = append(rows, *r)
		return nil
	})
	return rows, err
}

// Each implements store.Journal: the durable rows from seq from on, read a range at a time.
func (j *Journal) Each(from uint64, limit int, fn func(*journal.Row) error) error {
	return eachRow(context.Background(), j.h.cli, j.h.keys, max(from, 1), j.DurableSeq(), limit, fn)
}

// readPage is how many rows one range read of a journal asks for; readAhead how many range
// reads a reading of several pages has under way besides the one it decodes: a row's key is
// its seq, so the pages are known before they are read, and the round trips overlap.
const (
	readPage  = 512
	readAhead = 3
)

// page is one range read of rows, from seq start on.
type page struct {
	start uint64
	resp  *etcdrpc.GetResponse
	err   error
}

// eachRow calls fn with the rows from seq from to seq to (up to limit of them, 0: every one),
// in order.
func eachRow(ctx context.Context, cli *etcdrpc.Client, k keys, from, to uint64, limit int, fn func(*journal.Row) error) error {
	if limit > 0 {
		to = min(to, from+uint64(limit)-1)
	}
	if from > to {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan chan page, readAhead)
	go func() {
		defer close(pages)
		for start := from; start <= to; start += readPage {
			end := min(start+readPage-1, to)
			got := make(chan page, 1)
			select {
			case pages <- got:
			case <-ctx.Done():
				return
			}
			go func() {
				resp, err := cli.Get(ctx, k.row(start), etcdrpc.WithRange(k.row(end+1)))
				got <- page{start: start, resp: resp, err: err}
			}()
		}
	}()
	var row journal.Row
	for got := range pages {
		p := <-got
		if p.err != nil {
			return errs.New(errs.RunUnavailable, "journal: rows from %d could not be read", p.start).Wrap(p.err)
		}
		seq := p.start
		for _, kv := range p.resp.Kvs {
			if string(kv.Key) != k.row(seq) {
				return errs.New(errs.IncompatibleSchema, "journal: row %d is missing (the next key is %q)", seq, kv.Key)
			}
			value, err := rowBytes(ctx, cli, k, seq, kv.Value)
			if err != nil {
				return err
			}
			if err := journal.DecodeInto(value, &row, seq); err != nil {
				return fmt.Errorf("journal: %w", err)
			}
			if err := fn(&row); err != nil {
				return err
			}
			seq++
		}
		if end := min(p.start+readPage-1, to); seq <= end {
			return errs.New(errs.IncompatibleSchema, "journal: row %d is missing", seq)
		}
	}
	return nil
}

func (j *Journal) fence(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		j.err = err
	}
	j.pending, j.parts = nil, nil
}

// close commits what is buffered, unless the journal was fenced.
func (j *Journal) close(ctx context.Context) error {
	j.commitMu.Lock()
	defer j.commitMu.Unlock()
	j.mu.Lock()
	if j.err != nil || j.closed {
		j.closed = true
		j.mu.Unlock()
		return nil
	}
	batch, parts, first := j.pending, j.parts, j.durable+1
	j.pending, j.parts, j.closed = nil, nil, true
	j.mu.Unlock()
	if len(batch) > 0 {
		return j.commit(ctx, batch, parts, first)
	}
	return nil
}
