package session

import (
	"context"
	"os"
	"path/filepath"
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

// isThreadID is the form of a thread id: a letter or digit, then up to 127 letters, digits, -
// and _ (a function: the regular expression's counted repetition cost every start of crw 1.5 ms).
func isThreadID(s string) bool { return validName(s) && s[0] != '-' && s[0] != '_' }

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
			{Name: "lost-after", Usage: "how long a gone subagent's turn may stand still before its attempt is lost, --backend session (default 10m)"},
			{Name: "poll", Usage: "how often --backend session reads its inbox and the host (default 250ms)"},
		},
		Prepare: func(opts map[string]string) (map[string]string, error) {
			owner := firstSet(opts["owner"], os.Getenv(OwnerEnv))
			if owner == "" {
				return nil, errs.New(errs.CapabilityUnavailable,
					"--backend session: no owner thread: run crw from a shell of a Codex turn (it sets $%s) or give --owner THREAD; else use --backend fake", OwnerEnv)
			}
			if !isThreadID(owner) {
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
			out := map[string]string{"owner": owner, "host": "unix://" + path}
			for _, d := range durations {
				if v := strings.TrimSpace(opts[d.name]); v != "" {
					if _, err := parseDuration(d, v); err != nil {
						return nil, err
					}
					out[d.name] = v
				}
			}
			return out, nil
		},
		Open: func(cfg backend.Config) (backend.Backend, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			h, err := dial(ctx, cfg.Options["host"])
			if err != nil {
				return nil, errs.New(errs.CapabilityUnavailable, "--backend session: the owner's host %s cannot be reached", cfg.Options["host"]).Wrap(err)
			}
			c := Config{Run: cfg.Run, Owner: cfg.Options["owner"], Host: h, Dir: cfg.Dir, TmpDir: cfg.Env["TMPDIR"], Warn: cfg.Warn}
			// The recorded durations were checked when the run was created; a run.json edited since is refused.
			for _, d := range durations {
				if v := cfg.Options[d.name]; v != "" {
					if *d.field(&c), err = parseDuration(d, v); err != nil {
						h.Close()
						return nil, err
					}
				}
			}
			return New(c), nil
		},
	}
}

// durations are the settable durations of a session run, recorded in run.json with the run.
var durations = []durationOption{
	{"lost-after", time.Second, 24 * time.Hour, func(c *Config) *time.Duration { return &c.LostAfter }},
	{"poll", time.Millisecond, time.Minute, func(c *Config) *time.Duration { return &c.Poll }},
}

type durationOption struct {
	name     string
	min, max time.Duration
	field    func(*Config) *time.Duration
}

func parseDuration(d durationOption, v string) (time.Duration, error) {
	n, err := time.ParseDuration(v)
	if err != nil || n < d.min || n > d.max {
		return 0, errs.New(errs.InvalidRequest, "--%s: %q is not a duration from %s to %s (as 90s or 10m)", d.name, v, d.min, d.max)
	}
	return n, nil
}

func firstSet(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
