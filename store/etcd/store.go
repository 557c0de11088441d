package etcd

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/etcd/chunks"
	"github.com/crw-dev/crw/store/etcd/etcdrpc"
)

// DefaultTTL is how long a holder may go unheard before its run is free.
const DefaultTTL = 10 * time.Second

// Store keeps runs under a prefix of an etcd cluster: store.Store (docs/scale-out.md).
type Store struct {
	cli     *etcdrpc.Client
	prefix  string
	ttl     time.Duration
	hostDir string

	mu     sync.Mutex
	leases map[*lease]struct{}
	// crashAfter: the next holder of a run this Store gives ends its holding, as a process
	// killed there would, after this many commits (CrashAfterCommit).
	crashAfter map[string]uint64
}

// CrashAfterCommit makes the next holder of run that this Store gives lose its holding right
// after its nth commit, as a process killed there would (its lease revoked, so the next holder
// need not wait for it to expire): the simulator's fault (engine/sim), as store/mem has it.
func (s *Store) CrashAfterCommit(run string, n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.crashAfter == nil {
		s.crashAfter = map[string]uint64{}
	}
	s.crashAfter[run] = n
}

var _ store.Store = (*Store)(nil)

// Option sets a Store's option.
type Option func(*Store)

// WithTTL sets how long a holder may go unheard before its run is free (DefaultTTL).
func WithTTL(ttl time.Duration) Option { return func(s *Store) { s.ttl = ttl } }

// WithHostDir gives each run this process holds a folder on this host, dir/<run> (its
// Lease's Dir): where its worktrees and a backend's files go. Without it a lease has none.
func WithHostDir(dir string) Option { return func(s *Store) { s.hostDir = dir } }

// Open is the store under prefix (a key prefix such as /crw) of the cluster cli talks to; it
// checks that the cluster answers. The client stays the caller's: Close does not close it.
func Open(ctx context.Context, cli *etcdrpc.Client, prefix string, opts ...Option) (*Store, error) {
	prefix = strings.TrimRight(prefix, "/")
	if prefix == "" {
		return nil, errs.New(errs.InvalidRequest, "an etcd store needs a key prefix (such as /crw)")
	}
	s := &Store{cli: cli, prefix: prefix, ttl: DefaultTTL, leases: map[*lease]struct{}{}}
	for _, o := range opts {
		o(s)
	}
	if _, err := cli.Get(ctx, s.listKey(""), etcdrpc.WithPrefix(), etcdrpc.WithCountOnly()); err != nil {
		return nil, unavailable(err)
	}
	return s, nil
}

// Prefix is the key prefix everything of the store lives under.
func (s *Store) Prefix() string { return s.prefix }

func unavailable(err error) error {
	return errs.New(errs.RunUnavailable, "the etcd cluster did not answer").Wrap(err)
}

// under is key's part after prefix, of a key a read of prefix's range answered. A key outside it
// is an answer no etcd gives (a broken or hostile member): refused, where slicing it would panic.
func under(key []byte, prefix string) (string, error) {
	if len(key) < len(prefix) || string(key[:len(prefix)]) != prefix {
		return "", errs.New(errs.RunUnavailable, "the etcd cluster answered the key %q to a read of the keys under %q", key, prefix)
	}
	return string(key[len(prefix):]), nil
}

func notFound(run string) error {
	return errs.New(errs.InvalidRequest, "no run %s in the store", run).Wrap(store.ErrNoRun)
}

// checkID refuses what is no run id.
func checkID(run string) error {
	if !journal.ValidRunID(run) {
		return errs.New(errs.InvalidRequest, "%q is not a run id (like 20261130-052301-a1b2c3)", run)
	}
	return nil
}

// listKey is the key that lists a run (List ranges over them, never over a run's keys).
func (s *Store) listKey(run string) string { return s.prefix + "/list/" + run }

func (s *Store) keys(run string) keys { return runKeys(s.prefix, run) }

// exists is the condition that the run exists: its spec key does.
func exists(k keys) etcdrpc.Cmp { return etcdrpc.Compare(etcdrpc.CreateRevision(k.spec()), ">", 0) }

// ifRun runs ops in one transaction if the run exists: not found otherwise.
func (s *Store) ifRun(ctx context.Context, run string, ops ...etcdrpc.Op) (*etcdrpc.TxnResponse, error) {
	if err := checkID(run); err != nil {
		return nil, err
	}
	resp, err := s.cli.Txn(ctx).If(exists(s.keys(run))).Then(ops...).Commit()
	if err != nil {
		return nil, unavailable(err)
	}
	if !resp.Succeeded {
		return nil, notFound(run)
	}
	return resp, nil
}

// Close implements store.Store: the leases still held are let go.
func (s *Store) Close() error {
	s.mu.Lock()
	leases := make([]*lease, 0, len(s.leases))
	for l := range s.leases {
		leases = append(leases, l)
	}
	s.mu.Unlock()
	var errList []error
	for _, l := range leases {
		errList = append(errList, l.Release())
	}
	return errors.Join(errList...)
}

// Create implements store.Store: the spec, the list key and an empty summary, in one
// transaction that succeeds only if the spec key does not exist.
func (s *Store) Create(ctx context.Context, spec *store.Spec) error {
	if !journal.ValidRunID(spec.Run) {
		return errs.New(errs.InvalidRequest, "%q is not a run id", spec.Run)
	}
	data, err := journal.MarshalPlain(spec)
	if err != nil {
		return errs.New(errs.InvalidRequest, "run %s: its spec is not JSON", spec.Run).Wrap(err)
	}
	sum, _ := journal.MarshalPlain(journal.NewSummary())
	k := s.keys(spec.Run)
	resp, err := s.cli.Txn(ctx).
		If(etcdrpc.Compare(etcdrpc.CreateRevision(k.spec()), "=", 0)).
		Then(etcdrpc.OpPut(k.spec(), string(data)), etcdrpc.OpPut(s.listKey(spec.Run), ""), etcdrpc.OpPut(k.summary(), string(sum))).
		Commit()
	if err != nil {
		return unavailable(err)
	}
	if !resp.Succeeded {
		return errs.New(errs.InvalidRequest, "run %s exists already", spec.Run).Wrap(store.ErrExists)
	}
	return nil
}

// Spec implements store.Store.
func (s *Store) Spec(ctx context.Context, run string) (*store.Spec, error) {
	resp, err := s.ifRun(ctx, run, etcdrpc.OpGet(s.keys(run).spec()))
	if err != nil {
		return nil, err
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return nil, notFound(run)
	}
	var spec store.Spec
	if err := json.Unmarshal(kvs[0].Value, &spec); err != nil {
		return nil, errs.New(errs.IncompatibleSchema, "run %s: its spec does not read", run).Wrap(err)
	}
	spec.Upgrade()
	return &spec, nil
}

// List implements store.Store: a keys-only range over the list keys.
func (s *Store) List(ctx context.Context) ([]string, error) {
	from := s.listKey("")
	end := etcdrpc.GetPrefixRangeEnd(from)
	var ids []string
	var rev int64
	for key := from; ; {
		opts := []etcdrpc.OpOption{etcdrpc.WithRange(end), etcdrpc.WithKeysOnly(), etcdrpc.WithLimit(listPage)}
		if rev != 0 {
			opts = append(opts, etcdrpc.WithRev(rev)) // every page of one listing at one revision
		}
		resp, err := s.cli.Get(ctx, key, opts...)
		if err != nil {
			return nil, unavailable(err)
		}
		rev = resp.Header.Revision
		for _, kv := range resp.Kvs {
			id, err := under(kv.Key, from)
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return ids, nil // keys come in byte order, which is the ids' time order
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// listPage is how many run ids one range read of List takes: a store of 100,000 runs is
// listed in ten reads, none of them a response of megabytes. A test makes it smaller.
var listPage int64 = 10000

// Published implements store.Store: the status key, and whether the owner key exists.
func (s *Store) Published(ctx context.Context, run string) (*store.Status, bool, error) {
	k := s.keys(run)
	resp, err := s.ifRun(ctx, run, etcdrpc.OpGet(k.status()), etcdrpc.OpGet(k.owner(), etcdrpc.WithCountOnly()))
	if err != nil {
		return nil, false, err
	}
	held := resp.Responses[1].GetResponseRange().Count > 0
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return nil, held, nil
	}
	var st store.Status
	if err := json.Unmarshal(kvs[0].Value, &st); err != nil {
		return nil, held, errs.New(errs.IncompatibleSchema, "run %s: its published status does not read", run).Wrap(err)
	}
	return &st, held, nil
}

// Rows implements store.Store: the rows up to the summary's last seq, read with it, a range
// at a time.
func (s *Store) Rows(ctx context.Context, run string, from uint64, fn func(*journal.Row) error) error {
	k := s.keys(run)
	resp, err := s.ifRun(ctx, run, etcdrpc.OpGet(k.summary()))
	if err != nil {
		return err
	}
	sum, err := decodeSummary(resp.Responses[0].GetResponseRange().Kvs)
	if err != nil {
		return err
	}
	return eachRow(ctx, s.cli, k, max(from, 1), sum.LastSeq, 0, fn)
}

// Summary implements store.Store: the summary key, which every commit rewrites.
func (s *Store) Summary(ctx context.Context, run string) (*journal.Summary, error) {
	resp, err := s.ifRun(ctx, run, etcdrpc.OpGet(s.keys(run).summary()))
	if err != nil {
		return nil, err
	}
	return decodeSummary(resp.Responses[0].GetResponseRange().Kvs)
}

// Outstanding implements store.Store: the index's open and unknown keys, its first verdicts
// and their count, and the summary, read in one transaction.
func (s *Store) Outstanding(ctx context.Context, run string, limit int) (*journal.Outstanding, error) {
	k := s.keys(run)
	verdicts := etcdrpc.OpGet(k.verdicts(), etcdrpc.WithPrefix(), etcdrpc.WithLimit(int64(limit)))
	if limit <= 0 {
		verdicts = etcdrpc.OpGet(k.verdicts(), etcdrpc.WithPrefix(), etcdrpc.WithCountOnly())
	}
	resp, err := s.ifRun(ctx, run,
		etcdrpc.OpGet(k.opens(), etcdrpc.WithPrefix()),
		etcdrpc.OpGet(k.unknowns(), etcdrpc.WithPrefix()),
		verdicts,
		etcdrpc.OpGet(k.verdicts(), etcdrpc.WithPrefix(), etcdrpc.WithCountOnly()),
		etcdrpc.OpGet(k.summary()))
	if err != nil {
		return nil, err
	}
	out := &journal.Outstanding{Open: []journal.OpenCall{}, Unknown: []journal.UnknownCall{}, Verdicts: []journal.Verdict{}}
	bad := func(what string, key []byte, err error) error {
		return errs.New(errs.IncompatibleSchema, "run %s: index: %s %q does not read", run, what, key).Wrap(err)
	}
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		var o journal.OpenCall
		if err := json.Unmarshal(kv.Value, &o); err != nil {
			return nil, bad("open call", kv.Key, err)
		}
		out.Open = append(out.Open, o)
	}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		var u journal.UnknownCall
		if err := json.Unmarshal(kv.Value, &u); err != nil {
			return nil, bad("unknown call", kv.Key, err)
		}
		if !u.Reconciled {
			out.Unknown = append(out.Unknown, u)
		}
	}
	if limit > 0 {
		for _, kv := range resp.Responses[2].GetResponseRange().Kvs {
			var v journal.Verdict
			if err := json.Unmarshal(kv.Value, &v); err != nil {
				return nil, bad("verdict", kv.Key, err)
			}
			out.Verdicts = append(out.Verdicts, v)
		}
	}
	out = out.Sorted(limit)
	out.TotalVerdicts = int(resp.Responses[3].GetResponseRange().Count)
	sum, err := decodeSummary(resp.Responses[4].GetResponseRange().Kvs)
	if err != nil {
		return nil, err
	}
	out.Commits = sum.Commits
	return out, nil
}

// PutAnswer implements store.Store: a key of its own under the run's answers, which the
// holder reads in the order they were put (their create revisions).
func (s *Store) PutAnswer(ctx context.Context, run string, a store.Answer) error {
	data, err := journal.MarshalPlain(a)
	if err != nil {
		return errs.New(errs.InvalidRequest, "the answer is not JSON").Wrap(err)
	}
	_, err = s.ifRun(ctx, run, etcdrpc.OpPut(s.keys(run).answers()+randomHex(), string(data)))
	return err
}

func randomHex() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// RequestCancel implements store.Store: the cancel key, which a holder watches.
func (s *Store) RequestCancel(ctx context.Context, run string) error {
	_, err := s.ifRun(ctx, run, etcdrpc.OpPut(s.keys(run).cancel(), time.Now().UTC().Format(time.RFC3339Nano)))
	return err
}

// Delete implements store.Store: one transaction deletes every key of the run, if no process
// holds it. With a cleanup, the store holds the run itself while cleanup runs on the run's
// folder on this host (another host's worktrees of the run are that host's to remove), and the
// delete is conditioned on that holding.
func (s *Store) Delete(ctx context.Context, run string, cleanup func(dir string) error) error {
	if err := checkID(run); err != nil {
		return err
	}
	k := s.keys(run)
	deleteAll := []etcdrpc.Op{etcdrpc.OpDelete(k.run, etcdrpc.WithPrefix()), etcdrpc.OpDelete(s.listKey(run))}
	if cleanup == nil {
		resp, err := s.cli.Txn(ctx).
			If(exists(k), etcdrpc.Compare(etcdrpc.CreateRevision(k.owner()), "=", 0)).
			Then(deleteAll...).
			Else(etcdrpc.OpGet(k.spec(), etcdrpc.WithCountOnly())).
			Commit()
		switch {
		case err != nil:
			return unavailable(err)
		case resp.Succeeded:
			if s.hostDir != "" {
				// Its folder on this host holds no worktree (it has no repository): the
				// logs of its processes here, gone with it.
				_ = os.RemoveAll(filepath.Join(s.hostDir, run))
			}
			return nil
		case resp.Responses[0].GetResponseRange().Count == 0:
			return notFound(run)
		}
		return heldError(run)
	}
	h, _, err := hold(ctx, s.cli, k, run, s.ttl, []etcdrpc.Cmp{exists(k)})
	switch {
	case errors.Is(err, errNoRun):
		return notFound(run)
	case errors.Is(err, store.ErrHeld):
		return heldError(run)
	case err != nil:
		return err
	}
	defer h.release(ctx)
	// The run's folder on this host (its worktrees) is cleaned up; another host's are its own.
	var dir string
	if s.hostDir != "" {
		dir = filepath.Join(s.hostDir, run)
	}
	if err := cleanup(dir); err != nil {
		return err
	}
	if dir != "" {
		if err := os.RemoveAll(dir); err != nil {
			return errs.New(errs.CapabilityUnavailable, "run %s: its folder on this host %s cannot be removed: %v", run, dir, err).Next("remove it, then crw flow delete " + run)
		}
	}
	resp, err := s.cli.Txn(ctx).
		If(etcdrpc.Compare(etcdrpc.CreateRevision(k.owner()), "=", h.rev)).
		Then(deleteAll...).
		Commit()
	if err != nil {
		return unavailable(err)
	}
	if !resp.Succeeded {
		return errs.New(errs.RunUnavailable, "run %s: the delete's hold on it was lost while its cleanup ran", run).Wrap(store.ErrLeaseLost)
	}
	return nil
}

func heldError(run string) error {
	return errs.New(errs.RunUnavailable, "run %s is held by a live process: cancel it first", run).Wrap(store.ErrHeld)
}

// Shared implements store.Shared: any host's process may execute a run of the cluster.
func (s *Store) Shared() bool { return true }

// PutFile implements store.Store: the content under files/<digest>, at most one value's bytes.
func (s *Store) PutFile(ctx context.Context, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	if len(data) > MaxFileBytes {
		return "", errs.New(errs.InvalidRequest, "a file of %d bytes is past the %d an etcd store keeps", len(data), MaxFileBytes)
	}
	value := string(data)
	if chunks.Chunked(data) {
		ref, _, err := chunks.Put(ctx, s.cli, s.fileChunkKey(digest), data)
		if err != nil {
			return "", unavailable(err)
		}
		value = ref
	}
	if _, err := s.cli.Put(ctx, s.fileKey(digest), value); err != nil {
		return "", unavailable(err)
	}
	return digest, nil
}

// MaxFileBytes is the largest file an etcd store keeps: a large one is stored in chunks.
const MaxFileBytes = 256 << 20

func (s *Store) fileKey(digest string) string { return s.prefix + "/files/" + digest }

// fileChunkKey names the keys of the chunks of a large file.
func (s *Store) fileChunkKey(digest string) func(i int) string {
	return func(i int) string { return fmt.Sprintf("%s/filechunks/%s/%04x", s.prefix, digest, i) }
}

// File implements store.Store.
func (s *Store) File(ctx context.Context, digest string) ([]byte, error) {
	hexPart, ok := strings.CutPrefix(digest, "sha256:")
	if _, err := hex.DecodeString(hexPart); !ok || err != nil || len(hexPart) != 2*sha256.Size {
		return nil, errs.New(errs.InvalidRequest, "%q is no file digest (sha256:<hex>)", digest)
	}
	resp, err := s.cli.Get(ctx, s.fileKey(digest))
	if err != nil {
		return nil, unavailable(err)
	}
	if len(resp.Kvs) == 0 {
		return nil, errs.New(errs.RunUnavailable, "no file %s in the store", digest).Wrap(store.ErrNotFound)
	}
	return chunks.Get(ctx, s.cli, s.fileChunkKey(digest), resp.Kvs[0].Value, "file "+digest)
}

// Acquire implements store.Store: the run held (Hold, if its spec exists), its journal, and a
// watch on its cancel and owner keys.
func (s *Store) Acquire(ctx context.Context, run string) (store.Lease, error) {
	if err := checkID(run); err != nil {
		return nil, err
	}
	k := s.keys(run)
	h, cancel, err := hold(ctx, s.cli, k, run, s.ttl, []etcdrpc.Cmp{exists(k)})
	if errors.Is(err, errNoRun) {
		return nil, notFound(run)
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if n := s.crashAfter[run]; n > 0 {
		h.j.crashAfter = n
		delete(s.crashAfter, run)
	}
	s.mu.Unlock()
	var dir string
	if s.hostDir != "" {
		dir = filepath.Join(s.hostDir, run)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			h.release(ctx)
			return nil, errs.New(errs.RunUnavailable, "run %s: its folder on this host %s cannot be made: %v", run, dir, err)
		}
	}
	watchCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	l := &lease{s: s, h: h, dir: dir, cancelled: make(chan struct{}), stopWatch: stop}
	if cancel != nil {
		l.cancel()
	} else {
		go l.watch(watchCtx, k.cancel(), h.rev+1, func(*etcdrpc.Event) bool { l.cancel(); return true })
	}
	go l.watch(watchCtx, k.owner(), h.rev+1, func(ev *etcdrpc.Event) bool {
		if ev.Type == etcdrpc.DELETE || ev.Kv.CreateRevision != h.rev {
			h.lose()
			return true
		}
		return false
	})
	s.mu.Lock()
	s.leases[l] = struct{}{}
	s.mu.Unlock()
	return l, nil
}

// lease is a run held through the store: store.Lease over a Holding.
type lease struct {
	s         *Store
	h         *Holding
	dir       string // its folder on this host ("" without WithHostDir)
	stopWatch context.CancelFunc

	cancelOnce, releaseOnce sync.Once
	cancelled               chan struct{}
}

var _ store.Lease = (*lease)(nil)

func (l *lease) Run() string                { return l.h.run }
func (l *lease) Token() string              { return l.h.token }
func (l *lease) Journal() store.Journal     { return l.h.j }
func (l *lease) Dir() string                { return l.dir }
func (l *lease) Cancelled() <-chan struct{} { return l.cancelled }
func (l *lease) Lost() <-chan struct{}      { return l.h.lost }

func (l *lease) cancel() { l.cancelOnce.Do(func() { close(l.cancelled) }) }

// watch watches key from revision rev on until fn, called with each event, returns true or
// ctx ends; a watch that ends otherwise (a compaction, a lost stream) is taken up again from
// what the key holds then.
func (l *lease) watch(ctx context.Context, key string, rev int64, fn func(*etcdrpc.Event) bool) {
	for ctx.Err() == nil {
		for resp := range l.s.cli.Watch(etcdrpc.WithRequireLeader(ctx), key, etcdrpc.WithRev(rev)) {
			for _, ev := range resp.Events {
				if fn(ev) {
					return
				}
				rev = ev.Kv.ModRevision + 1
			}
			if resp.Err() != nil {
				break
			}
		}
		if ctx.Err() != nil {
			return
		}
		// Events may have been missed: what the key holds now stands for them.
		got, err := l.s.cli.Get(ctx, key)
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		ev := &etcdrpc.Event{Type: etcdrpc.DELETE, Kv: &etcdrpc.KeyValue{Key: []byte(key)}}
		if len(got.Kvs) > 0 {
			ev = &etcdrpc.Event{Type: etcdrpc.PUT, Kv: got.Kvs[0]}
		}
		if (len(got.Kvs) > 0 || key == l.h.keys.owner()) && fn(ev) {
			return
		}
		rev = got.Header.Revision + 1
	}
}

// Publish implements store.Lease: the status key, put if the holding is still this one.
func (l *lease) Publish(st *store.Status) {
	data, err := journal.MarshalPlain(st)
	if err != nil {
		return
	}
	_, _ = l.s.cli.Txn(context.Background()).
		If(etcdrpc.Compare(etcdrpc.CreateRevision(l.h.keys.owner()), "=", l.h.rev)).
		Then(etcdrpc.OpPut(l.h.keys.status(), string(data))).
		Commit()
}

// TakeAnswers implements store.Lease: the answers in the order they were put, deleted as they
// are read, if the holding is still this one.
func (l *lease) TakeAnswers() ([]store.Answer, error) {
	ctx := context.Background()
	resp, err := l.s.cli.Get(ctx, l.h.keys.answers(), etcdrpc.WithPrefix())
	if err != nil {
		return nil, unavailable(err)
	}
	kvs := slices.Clone(resp.Kvs)
	slices.SortFunc(kvs, func(a, b *etcdrpc.KeyValue) int { return cmp.Compare(a.CreateRevision, b.CreateRevision) })
	var out []store.Answer
	for len(kvs) > 0 {
		n := min(len(kvs), maxTxnOps)
		ops := make([]etcdrpc.Op, n)
		for i, kv := range kvs[:n] {
			ops[i] = etcdrpc.OpDelete(string(kv.Key))
		}
		resp, err := l.s.cli.Txn(ctx).
			If(etcdrpc.Compare(etcdrpc.CreateRevision(l.h.keys.owner()), "=", l.h.rev)).
			Then(ops...).
			Commit()
		if err != nil {
			return out, unavailable(err)
		}
		if !resp.Succeeded {
			return out, errs.New(errs.RunUnavailable, "run %s: answers", l.h.run).Wrap(store.ErrLeaseLost)
		}
		for _, kv := range kvs[:n] {
			var a store.Answer
			if err := json.Unmarshal(kv.Value, &a); err != nil {
				return out, errs.New(errs.IncompatibleSchema, "run %s: the answer %q does not read", l.h.run, kv.Key).Wrap(err)
			}
			out = append(out, a)
		}
		kvs = kvs[n:]
	}
	return out, nil
}

// Release implements store.Lease.
func (l *lease) Release() error {
	var err error
	l.releaseOnce.Do(func() {
		err = l.h.Release(context.Background())
		l.stopWatch()
		l.s.mu.Lock()
		delete(l.s.leases, l)
		l.s.mu.Unlock()
	})
	return err
}
