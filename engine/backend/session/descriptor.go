package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/bound"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/host"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/errs"
)

// HostEnv names the owner's app server socket when the option host is not given.
const HostEnv = "CRW_SESSION_HOST"

// OwnerEnv is the thread id Codex sets in the shell of a turn: the owner of a run started there.
const OwnerEnv = "CODEX_THREAD_ID"

// PrivateHost is the host a run records when it was given none: an app server of crw's own on
// the owner's CODEX_HOME, which reads the owner's subagents from disk.
const PrivateHost = "private"

// Hosts reaches the hosts a session run reads; the command line gives the real Codex ones.
type Hosts struct {
	// Dial connects to the owner's app server at its socket, unix:///abs/path.sock.
	Dial func(ctx context.Context, addr string) (host.Host, error)
	// Private starts an app server of crw's own, the codex binary codex on codexHome, its
	// stderr appended to log ("" discards it).
	Private func(ctx context.Context, codex, codexHome, log string) (host.Host, error)
	// FindCodex resolves the codex binary of a private host: path, else $CRW_CODEX, else codex
	// on PATH.
	FindCodex func(path string) (string, error)
}

// isThreadID is the form of a thread id: a letter or digit, then up to 127 letters, digits, -
// and _ (a function: the regular expression's counted repetition cost every start of crw 1.5 ms).
func isThreadID(s string) bool { return bus.ValidName(s) && s[0] != '-' && s[0] != '_' }

// Descriptor registers the session backend. Its options are the owner thread (--owner, else
// $CODEX_THREAD_ID) and the owner's app server (--host, else $CRW_SESSION_HOST; without one a
// private app server, --codex its binary), recorded with the owner's CODEX_HOME when the run is
// created, so every process of the run binds under the same owner and reads the same host.
func Descriptor(hosts Hosts) backend.Descriptor {
	return backend.Descriptor{
		Name:    Name,
		Summary: "each call a role subagent of the owner's Codex session (run from inside Codex)",
		Options: options,
		Prerequisites: []string{
			"an owner thread: the option owner, else $" + OwnerEnv + " (set in a shell of a Codex turn)",
			"a host: the owner's app server socket (the option host, else $" + HostEnv + "), else a codex binary for a private app server (the option codex, else $CRW_CODEX, else codex on PATH)",
			"a state folder: the run's steps and its owner's binding live in the state folder of the owner's host",
			"the roles crw codex setup writes into the owner's CODEX_HOME, and an owner that makes the steps' host calls",
		},
		Prepare: func(opts map[string]string) (map[string]string, error) { return prepare(hosts, opts) },
		Open:    func(cfg backend.Config) (backend.Backend, error) { return open(hosts, cfg) },
		// Its steps, replies and owner binding are in the state folder of its owner's host.
		HostBound: true,
	}
}

// options are the session backend's options.
var options = []backend.Option{
	{Name: "owner", Usage: "the owner thread of --backend session (default $" + OwnerEnv + ")"},
	{Name: "host", Usage: "the owner's app server socket of --backend session, unix:///abs/path (default $" + HostEnv + ", else a private app server)"},
	codex.Option,
	{Name: "lost-after", Usage: "how long a gone subagent's turn may stand still before its attempt is lost, --backend session (default 10m)"},
	{Name: "poll", Usage: "how often --backend session reads its inbox and the host (default 250ms)"},
	{Name: "wake", Usage: "on (default) wakes the owner when steps wait, --backend session; off for an owner that polls crw flow next"},
	{Name: "wake-after", Usage: "how long steps wait before --backend session wakes the owner again (default 15m; doubling)"},
	{Name: "renotify-max", Usage: "the longest interval between wakes of the owner, --backend session (default 1h)"},
	{Name: "unresponsive-after", Usage: "how long steps wait before the session_unresponsive escalation, --backend session (default 2h)"},
}

// prepare is what a run records of its options when it is created: the owner, its CODEX_HOME,
// its host (a socket, else a private app server and its codex binary), the wakes and the
// durations set.
func prepare(hosts Hosts, opts map[string]string) (map[string]string, error) {
	owner, err := ownerOf(opts)
	if err != nil {
		return nil, err
	}
	home, err := codexHome()
	if err != nil {
		return nil, err
	}
	out := map[string]string{"owner": owner, "codex-home": home}
	if err := prepareHost(hosts, opts, out); err != nil {
		return nil, err
	}
	switch w := strings.TrimSpace(opts["wake"]); w {
	case "", "on":
	case "off":
		out["wake"] = "off"
	default:
		return nil, errs.Field(backend.OptionField("wake"), "", "%q is neither on nor off", w)
	}
	for _, d := range durations {
		if v := strings.TrimSpace(opts[d.name]); v != "" {
			if _, err := parseDuration(d, v); err != nil {
				return nil, err
			}
			out[d.name] = v
		}
	}
	return out, nil
}

// ownerOf is the owner thread: the option owner, else $CODEX_THREAD_ID.
func ownerOf(opts map[string]string) (string, error) {
	owner := firstSet(opts["owner"], os.Getenv(OwnerEnv))
	if owner == "" {
		return "", errs.NewField(errs.CapabilityUnavailable, backend.OptionField("owner"), "",
			"no owner thread for backend session: run crw from a shell of a Codex turn (it sets $%s) or give the owner thread; else use another backend", OwnerEnv).
			Because("start", "owner_missing", "not_started", errs.Certain).NextNaming("{backend} fake (offline), or {backend} app-server")
	}
	if !isThreadID(owner) {
		return "", errs.Field(backend.OptionField("owner"), "", "%q is not a thread id", owner)
	}
	return owner, nil
}

// prepareHost records the run's host in out: the owner's app server at its socket (the option
// host, else $CRW_SESSION_HOST), else a private app server with its codex binary.
func prepareHost(hosts Hosts, opts, out map[string]string) error {
	if addr := firstSet(opts["host"], os.Getenv(HostEnv)); addr != "" {
		path := strings.TrimPrefix(addr, "unix://")
		if !filepath.IsAbs(path) {
			return errs.Field(backend.OptionField("host"), "", "%q is not unix:///absolute/path", addr)
		}
		if opts["codex"] != "" {
			return errs.Field(backend.OptionField("codex"), "", "names the binary of a private app server, but the owner's app server at %s serves the run", addr)
		}
		out["host"] = "unix://" + path
		return nil
	}
	bin, err := hosts.FindCodex(opts["codex"])
	if err != nil {
		const noHost = "backend session has no host to read the owner's subagents from: give the owner's app server socket, unix:///abs/path.sock (of `codex app-server --listen`, or $%s), or a codex binary for a private app server ($CRW_CODEX, or codex on PATH)"
		if opts["codex"] != "" {
			return errs.NewField(errs.CapabilityUnavailable, backend.OptionField("codex"), "", "not a codex binary: "+noHost, HostEnv).Wrap(err)
		}
		return errs.NewField(errs.CapabilityUnavailable, backend.OptionField("host"), "", "none given: "+noHost, HostEnv).Wrap(err)
	}
	out["host"], out["codex"] = PrivateHost, bin
	return nil
}

// open starts the backend of one process of a run on the options the run recorded: its host
// reached, the owner bindings (the owner's, which the process binds and lets go) and the spawn
// hook's ledger of the state folder, its durations.
func open(hosts Hosts, cfg backend.Config) (backend.Backend, error) {
	h, err := reach(hosts, cfg)
	if err != nil {
		return nil, err
	}
	c := Config{Run: cfg.Run, Owner: cfg.Options["owner"], Host: h, Dir: cfg.Dir, Env: cfg.Env, Warn: cfg.Warn, Report: cfg.Report, Process: cfg.Process,
		PrivateHost: cfg.Options["host"] == PrivateHost}
	c.Wake.Off = cfg.Options["wake"] == "off"
	if cfg.State != "" {
		c.Bindings, c.Ledger = ledgerOf(cfg.State)
		c.Binding = &Binding{Bindings: bound.New(cfg.State), Line: bound.Orchestrator(cfg.Run, inputs.RoleTable(cfg.Roles).Digest(), cfg.Roles), Live: cfg.Live}
	}
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
}

// reach is the host the run records: a private app server of crw's own (its stderr in the
// run's folder), else the owner's app server at its socket.
func reach(hosts Hosts, cfg backend.Config) (host.Host, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var h host.Host
	var err error
	if addr := cfg.Options["host"]; addr == PrivateHost {
		log := ""
		if cfg.Dir != "" {
			log = filepath.Join(cfg.Dir, codex.LogFile)
		}
		h, err = hosts.Private(ctx, cfg.Options["codex"], cfg.Options["codex-home"], log)
	} else {
		h, err = hosts.Dial(ctx, addr)
	}
	if err != nil {
		return nil, errs.New(errs.CapabilityUnavailable, "backend session: the owner's host %s cannot be reached", cfg.Options["host"]).Wrap(err)
	}
	return h, nil
}

// ledgerOf is the state folder's flow-bound folder and a reader of the spawn hook's ledger of
// an owner there.
func ledgerOf(state string) (string, func(owner string) ([]LedgerLine, error)) {
	ledger := bound.New(state)
	return ledger.Dir, func(owner string) ([]LedgerLine, error) {
		ds, err := ledger.Decisions(owner)
		lines := make([]LedgerLine, 0, len(ds))
		for _, d := range ds {
			lines = append(lines, LedgerLine{Op: d.Op, ToolUseID: d.ToolUseID})
		}
		return lines, err
	}
}

// durations are the settable durations of a session run, recorded in run.json with the run.
var durations = []durationOption{
	{"lost-after", time.Second, 24 * time.Hour, func(c *Config) *time.Duration { return &c.LostAfter }},
	{"poll", time.Millisecond, time.Minute, func(c *Config) *time.Duration { return &c.Poll }},
	{"wake-after", time.Second, 24 * time.Hour, func(c *Config) *time.Duration { return &c.Wake.After }},
	{"renotify-max", time.Second, 7 * 24 * time.Hour, func(c *Config) *time.Duration { return &c.Wake.RenotifyMax }},
	{"unresponsive-after", time.Second, 30 * 24 * time.Hour, func(c *Config) *time.Duration { return &c.Wake.UnresponsiveAfter }},
}

type durationOption struct {
	name     string
	min, max time.Duration
	field    func(*Config) *time.Duration
}

func parseDuration(d durationOption, v string) (time.Duration, error) {
	n, err := time.ParseDuration(v)
	if err != nil || n < d.min || n > d.max {
		return 0, errs.Field(backend.OptionField(d.name), "", "%q is not a duration from %s to %s (as 90s or 10m)", v, d.min, d.max)
	}
	return n, nil
}

// codexHome is the owner's CODEX_HOME, absolute: $CODEX_HOME, else ~/.codex.
func codexHome() (string, error) {
	if h := os.Getenv("CODEX_HOME"); h != "" {
		abs, err := filepath.Abs(h)
		if err != nil {
			return "", errs.New(errs.InvalidRequest, "$CODEX_HOME %q cannot be made absolute", h).Wrap(err)
		}
		return abs, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errs.New(errs.CapabilityUnavailable, "backend session: neither $CODEX_HOME nor a home directory names the owner's Codex home").Wrap(err)
	}
	return filepath.Join(home, ".codex"), nil
}

func firstSet(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
