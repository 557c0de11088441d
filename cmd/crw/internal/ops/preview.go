package ops

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/BurntSushi/toml"

	"github.com/crw-dev/crw/engine/backend/bound"
	"github.com/crw-dev/crw/engine/backend/session/nextview"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/runtime/modules/agent"
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
	SpawnFormats []nextview.SpawnFormat `json:"spawn_formats"`
	Facts        []Fact                 `json:"facts"`
	Next         string                 `json:"next"` // the command the steps are taken with
}

// PreviewOf is what a session run's preview judges: the run ("" before it is created), its
// owner thread, the owner's app server socket ("" for a private app server), the recorded
// CODEX_HOME, the repository ("" for none) and the role table.
type PreviewOf struct {
	Run, Owner, Host, CodexHome, Repo string
	Roles                             map[string]journal.Pair
}

// SessionPreview judges the session facts of a run about to start.
func SessionPreview(st Host, of PreviewOf) Preview {
	run, owner, codexHome, roles := of.Run, of.Owner, of.CodexHome, of.Roles
	p := Preview{SpawnFormats: nextview.SpawnFormats(agent.Roles, roles), Next: "crw flow next " + orRun(run) + " --json"}
	fact := func(name string, ok bool, format string, a ...any) {
		p.Facts = append(p.Facts, Fact{Name: name, OK: ok, Detail: fmt.Sprintf(format, a...)})
	}

	// owner_bound: a thread id, a binding crw can trust, and no other live run on the thread.
	switch last, err := bound.New(st.Root()).Last(owner); {
	case !bound.ValidThread(owner):
		fact("owner_bound", false, "%q is not a Codex thread id: the owner cannot be bound, and its spawns get no pair from the run", owner)
	case err != nil:
		fact("owner_bound", false, "the binding cannot be read: %v", err)
	case last.Open() && last.RunID != run && st.Live(last.RunID):
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
	// Same-thread review (a reviewer or critic that continues the thread of the work it
	// reviews) can only be seen as the run goes: a warning row then (same_thread_review).
	if len(open) > 0 {
		fact("role_models", false, "the role table leaves to the host: %s", strings.Join(open, ", "))
	} else {
		fact("role_models", true, "every role has a model and an effort")
	}

	// owner_state_writable: the run's folder, the bindings' folder, the owner's app server
	// socket and the repository, each as the run's process will write it.
	var unwritable, checked []string
	check := func(what string, err error) {
		checked = append(checked, what)
		if err != nil {
			unwritable = append(unwritable, fmt.Sprintf("%s: %v", what, err))
		}
	}
	if run != "" {
		check("the run folder "+st.RunDir(run), writable(st.RunDir(run)))
	} else {
		check("the state folder "+st.Root(), writable(st.Root()))
	}
	check(filepath.Join(st.Root(), bound.Folder), writableBindings(st.Root()))
	if path, ok := strings.CutPrefix(of.Host, "unix://"); ok {
		check("the owner's app server socket "+path, writableSocket(path))
	}
	if of.Repo != "" {
		dir, err := gitCommonDir(of.Repo)
		if err == nil {
			err = writable(dir)
		}
		check("the repository's git folder "+dir, err)
	}
	if len(unwritable) > 0 {
		fact("owner_state_writable", false, "%s", strings.Join(unwritable, "; "))
	} else {
		fact("owner_state_writable", true, "writable: %s", strings.Join(checked, ", "))
	}

	// subagent_slots and multi_agent_v1, from the owner's config.toml.
	limit := nextview.MaxThreads(codexHome)
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

// writableSocket tells whether a process of this user can connect to a unix socket: it is one,
// and it can be written.
func writableSocket(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("not a socket (%s)", fi.Mode().Type())
	}
	if err := syscall.Access(path, 2 /* W_OK */); err != nil {
		return fmt.Errorf("cannot be written: %w", err)
	}
	return nil
}

// gitCommonDir is the git folder a repository's worktrees and refs are written in.
func gitCommonDir(repo string) (string, error) {
	out, err := exec.Command("git", "-C", repo, "rev-parse", "--path-format=absolute", "--git-common-dir").Output()
	if err != nil {
		return repo, fmt.Errorf("not a git checkout: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
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
