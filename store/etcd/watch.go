package etcd

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/etcd/etcdrpc"
)

var (
	_ store.Watcher     = (*Store)(nil)
	_ store.RunsWatcher = (*Store)(nil)
)

// Changes implements store.Watcher with etcd watches of the keys a run's status is read from:
// its published status, its owner key (a holder taking or losing the run) and its journal's
// summary (each commit). A row is no change of its own: its commit's summary is. The watches
// need a leader (a member cut off from the others ends them), and end with ctx.
func (s *Store) Changes(ctx context.Context, run string) (<-chan struct{}, error) {
	k := s.keys(run)
	ch, err := s.watch(ctx, []watched{{key: k.status()}, {key: k.owner()}, {key: k.summary()}})
	if err != nil {
		return nil, errs.New(errs.RunUnavailable, "run %s: its changes cannot be watched", run).Wrap(err)
	}
	return ch, nil
}

// RunsChanged implements store.RunsWatcher with a watch of the runs' list keys (a run created)
// and one of the deletions under the runs' keys: an owner key's (a holder let a run go, or its
// lease expired), and the fewer others (an answer taken, a run deleted). No row or status
// write is seen: they are puts.
func (s *Store) RunsChanged(ctx context.Context) (<-chan struct{}, error) {
	ch, err := s.watch(ctx, []watched{
		{key: s.listKey(""), opts: []etcdrpc.OpOption{etcdrpc.WithPrefix(), etcdrpc.WithFilterDelete()}},
		{key: s.prefix + "/runs/", opts: []etcdrpc.OpOption{etcdrpc.WithPrefix(), etcdrpc.WithFilterPut()}},
	})
	if err != nil {
		return nil, errs.New(errs.RunUnavailable, "the runs' changes cannot be watched").Wrap(err)
	}
	return ch, nil
}

// watched is a key (or range) a watch covers.
type watched struct {
	key  string
	opts []etcdrpc.OpOption
}

// watch merges watches of ws into one channel of coalesced changes, returned once every watch
// is in place (etcd's created notice), closed when one of them ends or ctx does.
func (s *Store) watch(ctx context.Context, ws []watched) (<-chan struct{}, error) {
	wctx, cancelWatches := context.WithCancel(etcdrpc.WithRequireLeader(ctx))
	cancel := sync.OnceFunc(cancelWatches) // the watches' goroutines end them
	watches := make([]etcdrpc.WatchChan, len(ws))
	for i, w := range ws {
		watches[i] = s.cli.Watch(wctx, w.key, append(slices.Clone(w.opts), etcdrpc.WithCreatedNotify())...)
	}
	// In place once each says it was created: a look after this misses no change.
	for _, w := range watches {
		select {
		case resp, ok := <-w:
			if !ok || resp.Err() != nil || !resp.Created {
				cancel()
				err := ctx.Err()
				if ok && resp.Err() != nil {
					err = resp.Err()
				}
				if err == nil {
					err = errors.New("the watch ended before it was in place")
				}
				return nil, err
			}
		case <-ctx.Done():
			cancel()
			return nil, ctx.Err()
		}
	}
	out := make(chan struct{}, 1)
	var wg sync.WaitGroup
	for _, w := range watches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel() // one watch that ends ends them all
			for resp := range w {
				if resp.Err() != nil || resp.Canceled {
					return
				}
				select {
				case out <- struct{}{}:
				default: // a change not yet taken stands for this one too
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	return out, nil
}
