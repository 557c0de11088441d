package ops

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
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

// A StoreOpener opens the run service on the store an address of its scheme names, the
// folders of the runs this host holds under the state folder root.
type StoreOpener func(ctx context.Context, address, root string, backends *backend.Registry) (*engine.Service, store.Store, error)

// Stores are the stores a build speaks besides the state folder's, by their address's
// scheme, and the executables that speak the others.
type Stores struct {
	Open map[string]StoreOpener
	// SpokenBy names, by scheme, the executable a command on a store of that scheme is
	// handed to whole (its arguments, environment and streams): crw hands etcd:// to
	// crw-etcd, so that etcd's client is not started by every command.
	SpokenBy map[string]string
}

// handedOffEnv marks a process a command was handed to, so that an executable that does not
// speak the store either says so instead of handing it on in a loop.
const handedOffEnv = "CRW_HANDED_OFF"

// storeScheme is the scheme of a store address ("etcd" of etcd://…), "" when it has none.
func storeScheme(address string) string {
	scheme, _, ok := strings.Cut(address, "://")
	if !ok {
		return ""
	}
	return scheme
}

// HandOff replaces this process by the executable that speaks the store address names when
// this build does not, with the same arguments (args, the command line after the
// executable's name), environment and streams; it returns nil, having done nothing, when
// this build speaks the store or none speaks it (opening it then says why). The executable
// is looked for beside this one, then on $PATH.
func (s Stores) HandOff(address string, args []string) error {
	scheme := storeScheme(address)
	if address == "" || s.Open[scheme] != nil {
		return nil
	}
	name := s.SpokenBy[scheme]
	if name == "" {
		return nil
	}
	if prev := os.Getenv(handedOffEnv); prev != "" {
		return errs.New(errs.CapabilityUnavailable, "the store %s is on %s, which %s (handed this command by %s) does not speak either: install %s from the same release as crw", address, scheme, executableName(), prev, name)
	}
	path, err := handOffPath(name)
	if err != nil {
		return nil // opening the store says what is missing
	}
	env := append(os.Environ(), handedOffEnv+"="+executableName())
	if err := syscall.Exec(path, append([]string{path}, args...), env); err != nil {
		return errs.New(errs.CapabilityUnavailable, "the store %s is on %s, which %s speaks, and it could not be started: %v", address, scheme, path, err)
	}
	return nil // not reached: the process is path's now
}

// executableName is this process's executable, for what it says.
func executableName() string {
	self, err := os.Executable()
	if err != nil {
		return filepath.Base(os.Args[0])
	}
	return self
}

// handOffPath finds the executable name beside this process's executable, else on $PATH.
func handOffPath(name string) (string, error) {
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), name)
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return beside, nil
		}
	}
	return exec.LookPath(name)
}

// OpenStore is the run service on the store address names ("": the local store in the state
// folder root; etcd://…: a store on an etcd cluster, its runs' folders on this host under
// root), with the local store when it is the local one (nil otherwise: what needs a run's
// folder on this host, a session run's bus, is not there).
func (s Stores) OpenStore(ctx context.Context, address, root string, backends *backend.Registry) (*engine.Service, store.Store, *local.Store, error) {
	if address == "" {
		svc, st, err := Open(root, backends)
		if err != nil {
			return nil, nil, nil, err
		}
		return svc, st, st, nil
	}
	scheme := storeScheme(address)
	if open := s.Open[scheme]; open != nil {
		svc, st, err := open(ctx, address, root, backends)
		return svc, st, nil, err
	}
	if name := s.SpokenBy[scheme]; name != "" {
		return nil, nil, nil, errs.New(errs.CapabilityUnavailable, "the store %s is on %s, which this crw leaves to %s: none is beside %s or on $PATH (install it from the same release: go install github.com/crw-dev/crw/cmd/crw/%s)", address, scheme, name, executableName(), name)
	}
	return nil, nil, nil, errs.New(errs.InvalidRequest, "the store %q is no store address: give etcd://HOST:PORT[,HOST:PORT…]/PREFIX, or none for the state folder", address)
}

// EtcdExecutable is the executable that speaks stores on etcd: crw with etcd's client.
const EtcdExecutable = "crw-etcd"

// CrwStores are crw's own stores: the state folder's; a store on etcd is crw-etcd's.
func CrwStores() Stores {
	return Stores{SpokenBy: map[string]string{"etcd": EtcdExecutable}}
}
