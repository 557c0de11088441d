package etcd_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/internal/etcdtest"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/etcd"
	"github.com/crw-dev/crw/store/storetest"
)

// TestContract holds the etcd store to the store contract, on one cluster: each test a store on
// a prefix of its own, and another process's view of it through a client of its own.
func TestContract(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli, otherCli := c.Client(t), c.Client(t)
	var stores atomic.Int64
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) (store.Store, store.Store) {
			ctx := context.Background()
			prefix := fmt.Sprintf("/crw-test/%d", stores.Add(1))
			s, err := etcd.Open(ctx, cli, prefix)
			require.NoError(t, err)
			other, err := etcd.Open(ctx, otherCli, prefix)
			require.NoError(t, err)
			t.Cleanup(func() { s.Close(); other.Close() })
			return s, other
		},
		// A lease is lost when its etcd lease is revoked, as one that expired is.
		Revoke: func(t *testing.T, s store.Store, run string) {
			ctx := context.Background()
			got, err := cli.Get(ctx, s.(*etcd.Store).Prefix()+"/runs/"+run+"/owner")
			require.NoError(t, err)
			require.Len(t, got.Kvs, 1, "the run is not held")
			id, err := strconvLease(string(got.Kvs[0].Value))
			require.NoError(t, err)
			_, err = cli.Revoke(ctx, id)
			require.NoError(t, err)
		},
	})
}
