// Package etcdstore opens a store on an etcd cluster for the command line. Only crw-etcd
// links it: etcd's client brings gRPC and protobuf, whose package initialisation would cost
// every other crw command about a third of its start (measured: crw version 31 ms → 43 ms).
package etcdstore

import (
	"context"
	"path/filepath"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/etcd"
)

// Stores are the stores of a build that speaks etcd: the state folder's and etcd's.
func Stores() ops.Stores {
	return ops.Stores{Open: map[string]ops.StoreOpener{etcd.Scheme: Open}}
}

// hostDir is the folder of the state folder root where the runs this host holds on an etcd
// store keep their worktrees and files.
const hostDir = "etcd"

// Open is the run service on the etcd store address names, its runs' folders on this host
// under root.
func Open(ctx context.Context, address, root string, backends *backend.Registry) (*engine.Service, store.Store, error) {
	a, err := etcd.ParseAddress(address)
	if err != nil {
		return nil, nil, errs.New(errs.InvalidRequest, "the store: %v", err)
	}
	cli, err := etcd.Dial(ctx, a)
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Join(root, hostDir)
	st, err := etcd.Open(ctx, cli, a.Prefix, etcd.WithHostDir(dir))
	if err != nil {
		cli.Close()
		return nil, nil, err
	}
	cs := &closingStore{Store: st, cli: cli}
	launcher := &ops.Launcher{RunDir: func(run string) string { return filepath.Join(dir, run) },
		Store: []string{"--state", root, "--store", address}}
	return &engine.Service{Store: cs, Backends: backends, Launcher: launcher}, cs, nil
}

// closingStore is a store on etcd that closes its client with it.
type closingStore struct {
	*etcd.Store
	cli *clientv3.Client
}

func (s *closingStore) Close() error {
	err := s.Store.Close()
	if cerr := s.cli.Close(); err == nil {
		err = cerr
	}
	return err
}
