package ops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// Host is what this host keeps of runs beside their store, whichever store that is: each
// run's folder here, its start lock, and the state folder, where session runs' owner bindings
// are. A session run lives partly here (its steps, its replies, its owner's binding): its
// commands read it through Host.
type Host interface {
	// Root is the state folder.
	Root() string
	// RunDir is a run's folder on this host.
	RunDir(run string) string
	// StartLock takes a run's start lock (held from before a session run's owner is bound
	// until its process holds the run); release lets it go.
	StartLock(run string) (release func(), err error)
	// Live tells whether a run is live: a process holds it, or its start does.
	Live(run string) bool
	// Held tells whether a process holds a run now.
	Held(run string) bool
}

var _ Host = (*local.Store)(nil)

// sharedHost is this host for a store that hosts share (an etcd cluster): runs' folders under
// dir, and a run live while a process of any host holds it or a start of this host does.
type sharedHost struct {
	root, dir string
	st        store.Store
}

func (h *sharedHost) Root() string             { return h.root }
func (h *sharedHost) RunDir(run string) string { return filepath.Join(h.dir, run) }

func (h *sharedHost) StartLock(run string) (func(), error) {
	if !journal.ValidRunID(run) {
		return nil, fmt.Errorf("%q is not a run id", run)
	}
	return local.StartLockIn(h.RunDir(run))
}

func (h *sharedHost) Live(run string) bool {
	if !journal.ValidRunID(run) {
		return false
	}
	// An owner's last binding may name a run of the state folder itself.
	if local.Live(h.root, run) || local.Starting(h.RunDir(run)) {
		return true
	}
	return h.held(run, true)
}

func (h *sharedHost) Held(run string) bool { return h.held(run, false) }

// held reads whether a process of any host holds run; unsure is the answer when the store
// cannot tell.
func (h *sharedHost) held(run string, unsure bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, held, err := h.st.Published(ctx, run)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return unsure
	}
	return held
}

// HostID names this host among those that share a store: its host name and a digest of its
// state folder, made absolute (two state folders on one machine are two hosts), as a record
// key may be.
func HostID(stateDir string) string {
	name, err := os.Hostname()
	if err != nil {
		name = "host"
	}
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '-'
	}, name)
	clean = strings.TrimLeft(clean, ".")
	if len(clean) > 64 {
		clean = clean[:64]
	}
	if abs, err := filepath.Abs(stateDir); err == nil {
		stateDir = abs
	}
	sum := sha256.Sum256([]byte(stateDir))
	return clean + "-" + hex.EncodeToString(sum[:4])
}
