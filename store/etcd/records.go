package etcd

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/etcd/etcdrpc"
)

// Records implements store.Store: a run's records under <run>/records/<kind>/<key> (deleted
// with the run), the store's own under records/<kind>/<key>.
func (s *Store) Records(run string, kind store.Kind) store.Records {
	r := &records{s: s, run: run, prefix: s.prefix + "/records/" + string(kind) + "/"}
	if run != "" {
		r.prefix = s.keys(run).records(string(kind))
	}
	return r
}

type records struct {
	s      *Store
	run    string
	prefix string
}

// txn runs ops if the key is a record's (when checkKey) and the run (if any) exists, with the
// conditions of cmps, in one transaction; ok says whether cmps held.
func (r *records) txn(ctx context.Context, key string, checkKey bool, cmps []etcdrpc.Cmp, ops ...etcdrpc.Op) (resp *etcdrpc.TxnResponse, ok bool, err error) {
	if checkKey && !store.ValidKey(key) {
		return nil, false, errs.New(errs.InvalidRequest, "%q is not a record key (1 to 128 of A-Z a-z 0-9 . _ -)", key)
	}
	if r.run != "" {
		if err := checkID(r.run); err != nil {
			return nil, false, err
		}
		// The run's existence first: its failure is told apart from cmps'.
		resp, err := r.s.cli.Txn(ctx).
			If(exists(r.s.keys(r.run))).
			Then(etcdrpc.OpTxn(cmps, ops, nil)).
			Commit()
		if err != nil {
			return nil, false, unavailable(err)
		}
		if !resp.Succeeded {
			return nil, false, notFound(r.run)
		}
		inner := resp.Responses[0].GetResponseTxn()
		return (*etcdrpc.TxnResponse)(inner), inner.Succeeded, nil
	}
	resp, err = r.s.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return nil, false, unavailable(err)
	}
	return resp, resp.Succeeded, nil
}

func (r *records) Put(ctx context.Context, key string, value []byte) error {
	_, _, err := r.txn(ctx, key, true, nil, etcdrpc.OpPut(r.prefix+key, string(value)))
	return err
}

func (r *records) Create(ctx context.Context, key string, value []byte) error {
	free := etcdrpc.Compare(etcdrpc.CreateRevision(r.prefix+key), "=", 0)
	_, ok, err := r.txn(ctx, key, true, []etcdrpc.Cmp{free}, etcdrpc.OpPut(r.prefix+key, string(value)))
	if err == nil && !ok {
		return errs.New(errs.IdempotencyConflict, "record %s exists already", key).Wrap(store.ErrExists)
	}
	return err
}

func (r *records) Get(ctx context.Context, key string) ([]byte, error) {
	resp, _, err := r.txn(ctx, key, true, nil, etcdrpc.OpGet(r.prefix+key))
	if err != nil {
		return nil, err
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return nil, errs.New(errs.InvalidRequest, "no record %s", key).Wrap(store.ErrNotFound)
	}
	return kvs[0].Value, nil
}

func (r *records) List(ctx context.Context, prefix string) ([]store.Record, error) {
	resp, _, err := r.txn(ctx, prefix, false, nil, etcdrpc.OpGet(r.prefix+prefix, etcdrpc.WithPrefix()))
	if err != nil {
		return nil, err
	}
	var out []store.Record
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		key, err := under(kv.Key, r.prefix+prefix)
		if err != nil {
			return nil, err
		}
		out = append(out, store.Record{Key: prefix + key, Value: kv.Value})
	}
	return out, nil
}

func (r *records) Delete(ctx context.Context, key string) error {
	_, _, err := r.txn(ctx, key, true, nil, etcdrpc.OpDelete(r.prefix+key))
	return err
}

// Log implements store.Store: a run's log under <run>/log/ (deleted with the run; a run that
// does not exist takes no line), the store's own under log/ (which a key that is no run id
// names too). A log is its size key and a key per line, named by the line's byte offset, so a
// read from an offset is a range read.
func (s *Store) Log(run string) store.Log {
	if run == "" || !journal.ValidRunID(run) {
		return &etcdLog{s: s, dir: s.prefix + "/log/"}
	}
	return &etcdLog{s: s, dir: s.keys(run).log(), run: run}
}

type etcdLog struct {
	s   *Store
	dir string
	run string
}

func (l *etcdLog) size() string          { return l.dir + "size" }
func (l *etcdLog) lines() string         { return l.dir + "lines/" }
func (l *etcdLog) line(off int64) string { return l.lines() + fmt.Sprintf("%016x", off) }
func (l *etcdLog) Name() string          { return "etcd " + l.dir }
func (l *etcdLog) ctx() context.Context  { return context.Background() }

// Append implements store.Log: the line at the log's size, and the size moved past it, in a
// transaction conditioned on the size key as read (tried again if another appender was first).
func (l *etcdLog) Append(line []byte) error {
	line = append(bytes.TrimRight(line, "\n"), '\n')
	if len(line) > store.MaxLogLine {
		return fmt.Errorf("log %s: a line of %d bytes is past the %d a line may take", l.Name(), len(line), store.MaxLogLine)
	}
	ctx := l.ctx()
	for {
		got, err := l.s.cli.Get(ctx, l.size())
		if err != nil {
			return unavailable(err)
		}
		size, modRev := int64(0), int64(0)
		if len(got.Kvs) > 0 {
			if size, err = strconv.ParseInt(string(got.Kvs[0].Value), 10, 64); err != nil {
				return errs.New(errs.IncompatibleSchema, "log %s: its size does not read", l.Name()).Wrap(err)
			}
			modRev = got.Kvs[0].ModRevision
		}
		cmps := []etcdrpc.Cmp{etcdrpc.Compare(etcdrpc.ModRevision(l.size()), "=", modRev)}
		if l.run != "" {
			cmps = append(cmps, exists(l.s.keys(l.run)))
		}
		resp, err := l.s.cli.Txn(ctx).If(cmps...).
			Then(etcdrpc.OpPut(l.line(size), string(line)), etcdrpc.OpPut(l.size(), strconv.FormatInt(size+int64(len(line)), 10))).
			Commit()
		if err != nil {
			return unavailable(err)
		}
		if resp.Succeeded {
			return nil
		}
		if l.run != "" {
			if _, err := l.s.ifRun(ctx, l.run); err != nil {
				return err
			}
		}
	}
}

// Size implements store.Log.
func (l *etcdLog) Size() (int64, error) {
	got, err := l.s.cli.Get(l.ctx(), l.size())
	if err != nil {
		return 0, unavailable(err)
	}
	if len(got.Kvs) == 0 {
		return 0, nil
	}
	return strconv.ParseInt(string(got.Kvs[0].Value), 10, 64)
}

// Read implements store.Log: the lines from the one that holds offset on, as many as make
// max bytes and a line's bound past offset.
func (l *etcdLog) Read(offset int64, max int) ([]byte, int64, error) {
	if max <= 0 || max > store.MaxLogRead {
		max = store.MaxLogRead
	}
	ctx := l.ctx()
	// The line that holds offset: the last key at or before it.
	first, err := l.s.cli.Get(ctx, l.lines(), etcdrpc.WithRange(l.line(offset+1)),
		etcdrpc.WithSort(etcdrpc.SortByKey, etcdrpc.SortDescend), etcdrpc.WithLimit(1), etcdrpc.WithKeysOnly())
	if err != nil {
		return nil, offset, unavailable(err)
	}
	from := l.lines()
	if len(first.Kvs) > 0 {
		from = string(first.Kvs[0].Key)
	}
	var buf []byte
	var base int64 = -1
	end := etcdrpc.GetPrefixRangeEnd(l.lines())
	for base < 0 || int64(len(buf))-(offset-base) < int64(max+store.MaxLogLine) {
		resp, err := l.s.cli.Get(ctx, from, etcdrpc.WithRange(end), etcdrpc.WithLimit(64))
		if err != nil {
			return nil, offset, unavailable(err)
		}
		for _, kv := range resp.Kvs {
			line, err := under(kv.Key, l.lines())
			if err != nil {
				return nil, offset, err
			}
			off, err := strconv.ParseInt(line, 16, 64)
			if err != nil {
				return nil, offset, errs.New(errs.IncompatibleSchema, "log %s: the key %q is no line's", l.Name(), kv.Key)
			}
			if base < 0 {
				base = off
			}
			if off != base+int64(len(buf)) {
				return nil, offset, errs.New(errs.IncompatibleSchema, "log %s: the line at %d is missing", l.Name(), base+int64(len(buf)))
			}
			buf = append(buf, kv.Value...)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	if base < 0 || offset < base || offset >= base+int64(len(buf)) {
		return nil, offset, nil
	}
	lines, next, err := store.WholeLines(bytes.NewReader(buf[offset-base:]), int64(len(buf))-(offset-base), 0, max)
	return lines, offset + next, err
}
