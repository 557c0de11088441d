package ops

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/crw-dev/crw/engine/session"
	"github.com/crw-dev/crw/engine/session/bound"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/runtime/modules/agent"
	"github.com/crw-dev/crw/store/local"
	"github.com/crw-dev/crw/userfile"
)

// Fact is one session fact of a start's preview: a warning when not OK, never a refusal.
type Fact struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Preview is what crw flow start says of a session run before anything starts: how each role's
// subagents are spawned and the session facts.
type Preview struct {
	SpawnFormats []session.SpawnFormat `json:"spawn_formats"`
	Facts        []Fact                `json:"facts"`
	Next         string                `json:"next"` // the command the steps are taken with
}

// SessionPreview judges the session facts of a run about to start: its owner, the recorded
// CODEX_HOME and the role table.
func SessionPreview(st *local.Store, run, owner, codexHome string, roles map[string]journal.Pair) Preview {
	p := Preview{SpawnFormats: session.SpawnFormats(agent.Roles, roles), Next: "crw flow next " + orRun(run) + " --json"}
	fact := func(name string, ok bool, format string, a ...any) {
		p.Facts = append(p.Facts, Fact{Name: name, OK: ok, Detail: fmt.Sprintf(format, a...)})
	}

	// owner_bound: a thread id, a binding crw can trust, and no other live run on the thread.
	switch last, err := bound.New(st.Root()).Last(owner); {
	case !bound.ValidThread(owner):
		fact("owner_bound", false, "%q is not a Codex thread id: the owner cannot be bound, and its spawns get no pair from the run", owner)
	case err != nil:
		fact("owner_bound", false, "the binding cannot be read: %v", err)
	case last.Open() && last.RunID != run && local.Live(st.Root(), last.RunID):
		fact("owner_bound", false, "thread %s serves live run %s: this run will not bind it", owner, last.RunID)
	default:
		fact("owner_bound", true, "thread %s can be bound to the run", owner)
	}

	// role_models: each role's decided pair.
	var open []string
	for _, role := range agent.Roles {
		switch pr := roles[role]; {
		case pr.Model == "":
			open = append(open, role+" (no model)")
		case pr.Effort == "":
			open = append(open, role+" (no effort)")
		}
	}
	if len(open) > 0 {
		fact("role_models", false, "the role table leaves to the host: %s", strings.Join(open, ", "))
	} else {
		fact("role_models", true, "every role has a model and an effort")
	}

	// owner_state_writable: the state folder and the bindings' folder.
	if err := writable(st.Root()); err != nil {
		fact("owner_state_writable", false, "the state folder %s: %v", st.Root(), err)
	} else if err := writableBindings(st.Root()); err != nil {
		fact("owner_state_writable", false, "%v", err)
	} else {
		fact("owner_state_writable", true, "the state folder and %s are writable", filepath.Join(st.Root(), bound.Folder))
	}

	// subagent_slots and multi_agent_v1, from the owner's config.toml.
	limit := session.MaxThreads(codexHome)
	if limit < 2 {
		fact("subagent_slots", false, "agents.max_threads is %d: the owner keeps one slot, none is left for a call", limit)
	} else {
		fact("subagent_slots", true, "agents.max_threads is %d: up to %d calls at once", limit, limit-1)
	}
	var cfg struct {
		Features map[string]any `toml:"features"`
		Agents   map[string]any `toml:"agents"`
	}
	data, err := userfile.Read(filepath.Join(codexHome, "config.toml"), 4<<20)
	if err == nil {
		_, err = toml.Decode(string(data), &cfg)
	}
	switch {
	case err != nil && !errors.Is(err, os.ErrNotExist):
		fact("multi_agent_v1", false, "%s cannot be read: %v", filepath.Join(codexHome, "config.toml"), err)
	case cfg.Features["multi_agent_v2"] == true:
		fact("multi_agent_v1", false, "features.multi_agent_v2 is on: its spawn_agent returns no agent id, and a session run cannot bind its subagents")
	case cfg.Features["multi_agent"] == false || cfg.Agents["enabled"] == false:
		fact("multi_agent_v1", false, "the multi-agent tools are off (features.multi_agent or agents.enabled): the owner cannot spawn subagents")
	default:
		fact("multi_agent_v1", true, "the owner has the multi_agent_v1 tools")
	}
	fact("verifier_prerequisites", true, "crw has no verifier: nothing to check")
	return p
}

func orRun(run string) string {
	if run == "" {
		return "RUN"
	}
	return run
}

// writable tells whether a folder can take a new file (made when missing).
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".crw-writable-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

func writableBindings(state string) error {
	dir := filepath.Join(state, bound.Folder)
	if err := (bound.Store{Dir: dir}).Check(); err != nil {
		return err
	}
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil // made 0700 at the first bind
	}
	return writable(dir)
}
