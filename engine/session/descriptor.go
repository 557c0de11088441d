package session

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/errs"
)

// HostEnv names the owner's app server socket when --host is not given.
const HostEnv = "CRW_SESSION_HOST"

// OwnerEnv is the thread id Codex sets in the shell of a turn: the owner of a run started there.
const OwnerEnv = "CODEX_THREAD_ID"

// Dialer connects to the owner's host at an address (unix:///abs/path.sock).
type Dialer func(ctx context.Context, addr string) (Host, error)

var threadID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// Descriptor registers the session backend. Its options are the owner thread (--owner, else
// $CODEX_THREAD_ID) and the owner's app server (--host, else $CRW_SESSION_HOST), both recorded
// when the run is created, so every process of the run binds under the same owner and reads the
// same host. dial reaches the host.
func Descriptor(dial Dialer) backend.Descriptor {
	return backend.Descriptor{
		Name:    Name,
		Summary: "each call a role subagent of the owner's Codex session (run from inside Codex)",
		Options: []backend.Option{
			{Name: "owner", Usage: "the owner thread of --backend session (default $" + OwnerEnv + ")"},
			{Name: "host", Usage: "the owner's app server socket of --backend session, unix:///abs/path (default $" + HostEnv + ")"},
		},
		Prepare: func(opts map[string]string) (map[string]string, error) {
			owner := firstSet(opts["owner"], os.Getenv(OwnerEnv))
			if owner == "" {
				return nil, errs.New(errs.CapabilityUnavailable,
					"--backend session: no owner thread: run crw from a shell of a Codex turn (it sets $%s) or give --owner THREAD; else use --backend fake", OwnerEnv)
			}
			if !threadID.MatchString(owner) {
				return nil, errs.New(errs.InvalidRequest, "--owner: %q is not a thread id", owner)
			}
			host := firstSet(opts["host"], os.Getenv(HostEnv))
			if host == "" {
				return nil, errs.New(errs.CapabilityUnavailable,
					"--backend session: no host to read the owner's subagents from: give --host unix:///abs/path.sock (the socket of `codex app-server --listen`) or set $%s", HostEnv)
			}
			path := strings.TrimPrefix(host, "unix://")
			if !filepath.IsAbs(path) {
				return nil, errs.New(errs.InvalidRequest, "--host: %q is not unix:///absolute/path", host)
			}
			return map[string]string{"owner": owner, "host": "unix://" + path}, nil
		},
		Open: func(cfg backend.Config) (backend.Backend, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			h, err := dial(ctx, cfg.Options["host"])
			if err != nil {
				return nil, errs.New(errs.CapabilityUnavailable, "--backend session: the owner's host %s cannot be reached", cfg.Options["host"]).Wrap(err)
			}
			return New(Config{Run: cfg.Run, Owner: cfg.Options["owner"], Host: h, Dir: cfg.Dir, TmpDir: cfg.Env["TMPDIR"], Warn: cfg.Warn}), nil
		},
	}
}

func firstSet(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
