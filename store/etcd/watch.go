package etcd

import (
	"context"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store"
)

var _ store.Watcher = (*Store)(nil)

// Changes implements store.Watcher with etcd watches of the keys a run's status is read from:
// its published status, its owner key (a holder taking or losing the run) and its journal's
// summary (each commit). A row is no change of its own: its commit's summary is. The watches
// need a leader (a member cut off from the others ends them), and end with ctx.
func (s *Store) Changes(ctx context.Context, run string) (<-chan struct{}, error) {
	k := s.keys(run)
	wctx, cancelWatches := context.WithCancel(clientv3.WithRequireLeader(ctx))
	cancel := sync.OnceFunc(cancelWatches) // the watches' goroutines end them
	keys := []string{k.status(), k.owner(), k.summary()}
	watches := make([]clientv3.WatchChan, len(keys))
	for i, key := range keys {
		watches[i] = s.cli.Watch(wctx, key, clientv3.WithCreatedNotify())
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
				return nil, errs.New(errs.RunUnavailable, "run %s: its changes cannot be watched", run).Wrap(err)
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
