// Package ops is what crw's command line and its MCP server both do with runs: the state
// folder and the run service on it, with the launcher of run processes; a run created from its
// options and started in a process of its own; a detached resume; a session run's next and
// dispatched for its owner; what inspect adds of a run's host; who a mutation is by. Both
// callers render what it returns in their own way; it prints nothing.
package ops

import (
	"os"
	"path/filepath"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store/local"
)

// StateDir is where runs live: flag (--state) when set, else $CRW_STATE, else
// $XDG_STATE_HOME/crw, else ~/.local/state/crw.
func StateDir(flag string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	if d := os.Getenv("CRW_STATE"); d != "" {
		return filepath.Abs(d)
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "crw"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errs.New(errs.CapabilityUnavailable, "no state folder: set CRW_STATE or --state").Wrap(err)
	}
	return filepath.Join(home, ".local", "state", "crw"), nil
}

// Open is the run service on the state folder root, whose run processes are crw itself.
func Open(root string, backends *backend.Registry) (*engine.Service, *local.Store, error) {
	st, err := local.New(root)
	if err != nil {
		return nil, nil, err
	}
	return &engine.Service{Store: st, Backends: backends, Launcher: localLauncher(st), Host: HostID(st.Root()), StateDir: st.Root()}, st, nil
}

// Who is who a mutation of this process is by: the Codex thread it runs in, else the user.
func Who() string {
	if t := os.Getenv("CODEX_THREAD_ID"); t != "" {
		return "thread " + t
	}
	return "uid " + itoa(os.Getuid())
}
