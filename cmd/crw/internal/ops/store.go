package ops

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/etcd"
	"github.com/crw-dev/crw/store/etcd/cluster"
	"github.com/crw-dev/crw/store/etcd/etcdrpc"
)

// StoreEnv names the store a command works on when --store does not.
const StoreEnv = "CRW_STORE"

// StoreAddress is the store a command works on: flag (--store) when set, else $CRW_STORE;
// "" is the local store in the state folder.
func StoreAddress(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv(StoreEnv)
}

// etcdHostDir is the folder of the state folder root where the runs this host holds on an
// etcd store keep their worktrees and files.
const etcdHostDir = "etcd"

// OpenStore is the run service on the store address names ("": the local store in the state
// folder root; etcd://…: a store on an etcd cluster, its runs' folders on this host under
// root), and this host: the state folder and the runs' folders here.
func OpenStore(ctx context.Context, address, root string, backends *backend.Registry) (*engine.Service, store.Store, Host, error) {
	if address == "" {
		svc, st, err := Open(root, backends)
		if err != nil {
			return nil, nil, nil, err
		}
		return svc, st, st, nil
	}
	if !strings.HasPrefix(address, cluster.Scheme+"://") {
		return nil, nil, nil, errs.New(errs.InvalidRequest, "the store %q is no store address: give etcd://HOST:PORT[,HOST:PORT…]/PREFIX, or none for the state folder", address)
	}
	a, err := cluster.ParseAddress(address)
	if err != nil {
		return nil, nil, nil, errs.New(errs.InvalidRequest, "the store: %v", err)
	}
	cli, err := cluster.Dial(ctx, a)
	if err != nil {
		return nil, nil, nil, err
	}
	if abs, err := filepath.Abs(root); err == nil {
		root = abs // as the local store names it: messages and the host's id read it
	}
	hostDir := filepath.Join(root, etcdHostDir)
	opts := []etcd.Option{etcd.WithHostDir(hostDir)}
	if a.TTL != 0 {
		opts = append(opts, etcd.WithTTL(a.TTL))
	}
	st, err := etcd.Open(ctx, cli, a.Prefix, opts...)
	if err != nil {
		cli.Close()
		return nil, nil, nil, err
	}
	cs := &etcdStore{Store: st, cli: cli}
	launcher := &Launcher{RunDir: func(run string) string { return filepath.Join(hostDir, run) },
		Store: []string{"--state", root, "--store", address}}
	svc := &engine.Service{Store: cs, Backends: backends, Launcher: launcher, Host: HostID(root), StateDir: root}
	return svc, cs, &sharedHost{root: root, dir: hostDir, st: cs}, nil
}

// etcdStore is a store on etcd that closes its client with it.
type etcdStore struct {
	*etcd.Store
	cli *etcdrpc.Client
}

func (s *etcdStore) Close() error {
	err := s.Store.Close()
	if cerr := s.cli.Close(); err == nil {
		err = cerr
	}
	return err
}
