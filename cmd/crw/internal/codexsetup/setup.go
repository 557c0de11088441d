// Package codexsetup puts crw's roles and its spawn hook into a CODEX_HOME: crw codex setup.
// It writes, idempotently and without touching the user's own settings:
//   - a role file per role, <CODEX_HOME>/crw/agents/<role>.toml, with the role's overlay as its
//     developer instructions and the pair the role table decides for it;
//   - the spawn hook in <CODEX_HOME>/hooks.json (a PreToolUse group matching spawn_agent),
//     merged into the user's hooks;
//   - a block of config.toml between crw's markers: an [agents.<role>] table for each role the
//     user does not define, and the hook's trust ([hooks.state."<key>"] trusted_hash, the hash
//     Codex's own hooks/list gives, as Codex runs no hook it does not trust).
package codexsetup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	stricttoml "github.com/pelletier/go-toml/v2"

	"github.com/crw-dev/crw/engine/backend/bound"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/session/roles"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/userfile"
)

// Block markers: crw's part of config.toml lies between them.
const (
	blockStart = "# >>> crw codex setup: written by crw; edit the roles with crw codex setup --roles >>>"
	blockEnd   = "# <<< crw codex setup <<<"
)

// HookMarker is in the command of crw's hook: how setup finds its own group in hooks.json.
const HookMarker = " codex hook"

// maxConfig bounds the configuration files read.
const maxConfig = 4 << 20

// Options are what setup writes.
type Options struct {
	CodexHome string                  // absolute
	Roles     map[string]journal.Pair // the role table's decided pairs (nil: every role undecided)
	// HookCommand is what Codex runs for each spawn: crw's absolute path, its state folder and
	// "codex hook".
	HookCommand string
	// Trust reads the hashes Codex gives the hooks of CodexHome (hooks/list): key → currentHash
	// and trustStatus. nil leaves the hook untrusted (setup says so).
	Trust func(ctx context.Context, codexHome string) (map[string]HookState, error)
}

// HookState is a hook as Codex's hooks/list reports it.
type HookState struct {
	Hash   string
	Status string // trusted, untrusted, modified
}

// Report says what setup found or did, role by role and for the hook.
type Report struct {
	CodexHome string       `json:"codex_home"`
	Roles     []RoleReport `json:"roles"`
	Hook      HookReport   `json:"hook"`
	Written   []string     `json:"written,omitempty"`
	// Missing lists what --check finds missing or out of date; empty when all is in place.
	Missing []string `json:"missing"`
}

// RoleReport is one role.
type RoleReport struct {
	Role   string       `json:"role"`
	File   string       `json:"file"`
	Pair   journal.Pair `json:"pair"`
	Status string       `json:"status"` // in_place, written, missing, out_of_date, user_defined
}

// HookReport is the spawn hook.
type HookReport struct {
	Command string `json:"command"`
	Key     string `json:"key,omitempty"`
	Status  string `json:"status"` // trusted, untrusted, missing, written
	Detail  string `json:"detail,omitempty"`
}

// ErrUserFile is wrapped by the error of a file of the user's that setup cannot add to
// without breaking it or the user's settings: it writes nothing then.
var ErrUserFile = errors.New("a file of the CODEX_HOME cannot take crw's settings")

// Setup writes what is missing or out of date and reports it; check only reports. Everything is
// worked out and checked before anything is written: a config.toml or hooks.json that would not
// take crw's part (not TOML or JSON, a form crw's tables would clash with, a link) is an
// ErrUserFile and nothing changes.
func Setup(ctx context.Context, o Options, check bool) (*Report, error) {
	if !filepath.IsAbs(o.CodexHome) {
		return nil, fmt.Errorf("the CODEX_HOME %q is not absolute", o.CodexHome)
	}
	rep := &Report{CodexHome: o.CodexHome, Missing: []string{}}
	if fi, err := os.Stat(o.CodexHome); err != nil || !fi.IsDir() {
		if !check {
			if err := os.MkdirAll(o.CodexHome, 0o700); err != nil {
				return nil, err
			}
		} else {
			rep.Missing = append(rep.Missing, "the CODEX_HOME "+o.CodexHome)
			rep.Hook = HookReport{Command: o.HookCommand, Status: "missing"}
			return rep, nil
		}
	}
	s := &setup{o: o, check: check, rep: rep,
		configPath: filepath.Join(o.CodexHome, "config.toml"), hooksPath: filepath.Join(o.CodexHome, "hooks.json")}
	if err := s.readUserFiles(); err != nil {
		return nil, err
	}
	if err := s.roles(); err != nil {
		return nil, err
	}
	haveHooks, _ := readOptional(s.hooksPath)
	if !bytes.Equal(haveHooks, s.hooks) {
		if check {
			rep.Hook.Status = "missing"
			rep.Missing = append(rep.Missing, "the spawn hook in "+s.hooksPath)
		} else {
			s.writes = append(s.writes, write{s.hooksPath, s.hooks})
		}
	}
	if err := s.configFile(); err != nil {
		return nil, err
	}
	if !check {
		if err := os.MkdirAll(filepath.Join(o.CodexHome, "crw", "agents"), 0o700); err != nil {
			return nil, err
		}
		for _, w := range s.writes {
			if err := writeFile(w.path, w.data); err != nil {
				return nil, err
			}
			rep.Written = append(rep.Written, w.path)
		}
	}
	if err := s.trust(ctx); err != nil {
		return nil, err
	}
	return rep, nil
}

// setup is one run of Setup: what it read of the user's files, and what it would write.
type setup struct {
	o                     Options
	check                 bool
	rep                   *Report
	configPath, hooksPath string
	config                []byte         // config.toml as it is
	user, ours            string         // its user's part, and crw's block
	agents                map[string]any // the user's [agents] table
	hooks                 []byte         // hooks.json with crw's hook
	userTrust             bool           // the user trusts the hook's key in their own part
	writes                []write
	block                 strings.Builder // crw's block of config.toml, without its trust and end
}

type write struct {
	path string
	data []byte
}

// readUserFiles reads config.toml and hooks.json, and works out hooks.json with crw's hook.
func (s *setup) readUserFiles() error {
	config, err := readOptional(s.configPath)
	if err != nil {
		return err
	}
	s.config = config
	s.user, s.ours, err = splitBlock(string(config))
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUserFile, s.configPath, err)
	}
	var userConfig map[string]any
	if _, err := toml.Decode(s.user, &userConfig); err != nil {
		return fmt.Errorf("%w: %s: not TOML: %v", ErrUserFile, s.configPath, err)
	}
	if s.agents, err = table(userConfig, "agents"); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUserFile, s.configPath, err)
	}
	hooks, group, err := mergeHook(s.hooksPath, s.o.HookCommand)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUserFile, err)
	}
	s.hooks = hooks
	s.rep.Hook = HookReport{Command: s.o.HookCommand, Key: fmt.Sprintf("%s:pre_tool_use:%d:0", s.hooksPath, group)}
	if hooksTable, err := table(userConfig, "hooks"); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUserFile, s.configPath, err)
	} else if state, err := table(hooksTable, "state"); err != nil {
		return fmt.Errorf("%w: %s: hooks.%v", ErrUserFile, s.configPath, err)
	} else {
		_, s.userTrust = state[s.rep.Hook.Key]
	}
	return nil
}

// roles works out the role files, and the [agents.<role>] tables of the roles the user
// leaves to crw.
func (s *setup) roles() error {
	rep := s.rep
	s.block.WriteString(blockStart + "\n")
	for _, role := range bound.Roles {
		r := RoleReport{Role: role, File: filepath.Join(s.o.CodexHome, "crw", "agents", role+".toml"), Pair: s.o.Roles[role]}
		if _, defined := s.agents[role]; defined {
			r.Status = "user_defined"
			rep.Roles = append(rep.Roles, r)
			continue
		}
		want := roleFile(role, r.Pair)
		have, err := readOptional(r.File)
		if err != nil {
			return err
		}
		switch {
		case bytes.Equal(have, want):
			r.Status = "in_place"
		case s.check && have == nil:
			r.Status = "missing"
		case s.check:
			r.Status = "out_of_date"
		default:
			s.writes = append(s.writes, write{r.File, want})
			r.Status = "written"
		}
		if r.Status == "missing" || r.Status == "out_of_date" {
			rep.Missing = append(rep.Missing, "role "+role+": "+r.Status)
		}
		fmt.Fprintf(&s.block, "[agents.%s]\ndescription = %s\nconfig_file = %s\n\n", role, strconv.Quote("crw's "+role+" role"),
			strconv.Quote(filepath.ToSlash(filepath.Join("crw", "agents", role+".toml"))))
		rep.Roles = append(rep.Roles, r)
	}
	return nil
}

// configText is config.toml: the user's part as it was, crw's block after it with trust,
// checked to be TOML as a whole before it is written.
func (s *setup) configText(trust string) (string, error) {
	text := s.block.String() + trust + blockEnd + "\n"
	sep := ""
	if s.user != "" && !strings.HasSuffix(s.user, "\n") {
		sep = "\n"
	}
	whole := s.user + sep + text
	// Checked by a strict TOML 1.0 decoder, as Codex reads it: BurntSushi's lets an inline
	// table be extended by crw's [agents.<role>], which Codex refuses.
	var parsed map[string]any
	if err := stricttoml.Unmarshal([]byte(whole), &parsed); err != nil {
		return "", fmt.Errorf("%w: %s: crw's roles and trust cannot be added to your settings without breaking them (%v); define the roles yourself or move the clashing settings", ErrUserFile, s.configPath, err)
	}
	return whole, nil
}

// trustEntry trusts the hook's key with hash, unless the user's own part does.
func (s *setup) trustEntry(hash string) string {
	if s.userTrust {
		return ""
	}
	return fmt.Sprintf("[hooks.state.%s]\ntrusted_hash = %s\n\n", strconv.Quote(s.rep.Hook.Key), strconv.Quote(hash))
}

// configFile works out config.toml. The trust entry is the hash Codex gives the hook as
// hooks.json holds it, asked once that file is written; the block keeps one for the same
// key meanwhile.
func (s *setup) configFile() error {
	oldTrust := trustOf(s.ours)
	if s.userTrust || !strings.HasPrefix(oldTrust, "[hooks.state."+strconv.Quote(s.rep.Hook.Key)+"]") {
		oldTrust = ""
	}
	whole, err := s.configText(oldTrust)
	if err != nil {
		return err
	}
	if _, err := s.configText(s.trustEntry("sha256:" + strings.Repeat("0", 64))); err != nil {
		return err // the hook's trust, once Codex gives its hash, would not fit either
	}
	if whole != string(s.config) {
		if s.check {
			s.rep.Missing = append(s.rep.Missing, "crw's block of "+s.configPath)
		} else {
			s.writes = append(s.writes, write{s.configPath, []byte(whole)})
		}
	}
	return nil
}

// trust asks Codex how it trusts the hook and, unless checking, trusts it with the hash
// Codex gives.
func (s *setup) trust(ctx context.Context) error {
	o, rep := s.o, s.rep
	if o.Trust == nil {
		if rep.Hook.Status == "" {
			rep.Hook.Status = "untrusted"
		}
		rep.Hook.Detail = "no codex binary to read the hook's hash from: Codex will not run it until it is trusted"
		rep.Missing = append(rep.Missing, "the spawn hook's trust")
		return nil
	}
	if s.check && rep.Hook.Status == "missing" {
		return nil // Codex cannot list a hook that is not written
	}
	states, err := o.Trust(ctx, o.CodexHome)
	if err != nil {
		return fmt.Errorf("reading the hooks' trust from Codex: %w", err)
	}
	st, ok := states[rep.Hook.Key]
	if !ok {
		rep.Hook.Status, rep.Hook.Detail = "missing", "Codex does not list the hook "+rep.Hook.Key+" (see crw codex setup --check, and hooks.json)"
		rep.Missing = append(rep.Missing, "the spawn hook, as Codex lists its hooks")
		return nil
	}
	if st.Status != "trusted" && !s.check && !s.userTrust {
		whole, err := s.configText(s.trustEntry(st.Hash))
		if err != nil {
			return err
		}
		if err := writeFile(s.configPath, []byte(whole)); err != nil {
			return err
		}
		if !slices.Contains(rep.Written, s.configPath) {
			rep.Written = append(rep.Written, s.configPath)
		}
		if states, err = o.Trust(ctx, o.CodexHome); err != nil {
			return fmt.Errorf("reading the hooks' trust from Codex: %w", err)
		}
		st = states[rep.Hook.Key]
	}
	rep.Hook.Status = st.Status
	if st.Status != "trusted" {
		rep.Missing = append(rep.Missing, "the spawn hook's trust ("+st.Status+")")
	}
	return nil
}

// table is the table under key of a decoded TOML document (nil when absent); any other value
// there is one crw's tables would clash with.
func table(doc map[string]any, key string) (map[string]any, error) {
	v, ok := doc[key]
	if !ok {
		return nil, nil
	}
	t, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a table (%T)", key, v)
	}
	return t, nil
}

// trustOf is the trust entry of crw's block, "" without one.
func trustOf(block string) string {
	i := strings.Index(block, "[hooks.state.")
	if i < 0 {
		return ""
	}
	return strings.TrimSuffix(block[i:], blockEnd+"\n")
}

// roleFile is a role's file: its overlay as developer instructions, and the decided parts of its
// pair (a role file pins them over what a spawn asks).
func roleFile(role string, pair journal.Pair) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# crw's %s role, written by crw codex setup; it writes the file again when the role table changes.\n", role)
	v := struct {
		Model       string `toml:"model,omitempty"`
		Effort      string `toml:"model_reasoning_effort,omitempty"`
		Instruction string `toml:"developer_instructions"`
	}{pair.Model, pair.Effort, roles.Overlay(role)}
	_ = toml.NewEncoder(&b).Encode(v)
	return b.Bytes()
}

// splitBlock separates config.toml into the user's part and crw's block (with its markers). A
// start marker without its end, or markers more than once, is the user's to mend.
func splitBlock(config string) (user, ours string, err error) {
	i := strings.Index(config, blockStart)
	if i < 0 {
		if strings.Contains(config, blockEnd) {
			return "", "", errors.New("crw's end marker without its start marker: mend the file by hand")
		}
		return config, "", nil
	}
	j := strings.Index(config[i:], blockEnd)
	if j < 0 {
		return "", "", errors.New("crw's start marker without its end marker: mend the file by hand")
	}
	end := i + j + len(blockEnd)
	if end < len(config) && config[end] == '\n' {
		end++
	}
	if strings.Contains(config[end:], blockStart) || strings.Contains(config[:i], blockEnd) {
		return "", "", errors.New("crw's markers are there more than once: mend the file by hand")
	}
	return config[:i] + config[end:], config[i:end], nil
}

// mergeHook is hooks.json with crw's PreToolUse group (matcher spawn_agent) in place of any
// earlier one of crw's, the user's hooks kept; group is its index among the PreToolUse groups.
func mergeHook(path, command string) (data []byte, group int, err error) {
	have, err := readOptional(path)
	if err != nil {
		return nil, 0, err
	}
	doc := map[string]any{}
	if len(bytes.TrimSpace(have)) > 0 {
		var v any
		if err := json.Unmarshal(have, &v); err != nil {
			return nil, 0, fmt.Errorf("%s: not JSON: %v", path, err)
		}
		switch v := v.(type) {
		case nil: // null: no hooks yet
		case map[string]any:
			doc = v
		default:
			return nil, 0, fmt.Errorf("%s: not a JSON object", path)
		}
	}
	hooks, _ := doc["hooks"].(map[string]any)
	if hooks == nil {
		if doc["hooks"] != nil {
			return nil, 0, fmt.Errorf("%s: hooks is not an object", path)
		}
		hooks = map[string]any{}
	}
	groups, _ := hooks["PreToolUse"].([]any)
	if groups == nil && hooks["PreToolUse"] != nil {
		return nil, 0, fmt.Errorf("%s: hooks.PreToolUse is not a list", path)
	}
	ours := map[string]any{"matcher": "spawn_agent", "hooks": []any{map[string]any{"type": "command", "command": command, "timeout": 10}}}
	group = -1
	for i, g := range groups {
		if isCrws(g) {
			if group < 0 {
				groups[i], group = ours, i
			} else {
				groups[i] = nil // a second one of crw's
			}
		}
	}
	kept := groups[:0]
	for _, g := range groups {
		if g != nil {
			kept = append(kept, g)
		}
	}
	groups = kept
	if group < 0 {
		groups, group = append(groups, ours), len(groups)
	}
	hooks["PreToolUse"] = groups
	doc["hooks"] = hooks
	data, err = json.MarshalIndent(doc, "", "  ")
	return append(data, '\n'), group, err
}

func isCrws(group any) bool {
	g, _ := group.(map[string]any)
	hs, _ := g["hooks"].([]any)
	for _, h := range hs {
		m, _ := h.(map[string]any)
		if c, _ := m["command"].(string); strings.Contains(c, HookMarker) && strings.Contains(c, "crw") {
			return true
		}
	}
	return false
}

func readOptional(path string) ([]byte, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("%w: %s is a link: crw replaces the files it writes whole, and would replace the link; write crw's part where the link points by running setup there, or make it a file", ErrUserFile, path)
	}
	data, err := userfile.Read(path, maxConfig)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return data, nil
}

// writeFile replaces a file whole, keeping its mode (0600 for a new one): a temporary file
// beside it, renamed into place.
func writeFile(path string, data []byte) error {
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".crw-*") // a new name: never through a planted link
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, mode)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// CodexTrust reads the hooks' trust from a private `codex app-server` (the binary codex; ""
// looks for $CRW_CODEX, then codex on PATH) on the CODEX_HOME: Codex's hooks/list, which gives
// each hook's key, the hash of its definition and whether it is trusted.
func CodexTrust(codexBin string) func(ctx context.Context, codexHome string) (map[string]HookState, error) {
	return func(ctx context.Context, codexHome string) (map[string]HookState, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		s, err := codex.StartServer(ctx, codex.ServerOptions{Codex: codexBin, CodexHome: codexHome})
		if err != nil {
			return nil, err
		}
		defer s.Stop(5 * time.Second)
		var list struct {
			Data []struct {
				Hooks []struct {
					Key         string `json:"key"`
					CurrentHash string `json:"currentHash"`
					TrustStatus string `json:"trustStatus"`
				} `json:"hooks"`
			} `json:"data"`
		}
		if err := s.Client().Call(ctx, "hooks/list", map[string]any{"cwds": []string{codexHome}}, &list); err != nil {
			return nil, err
		}
		out := map[string]HookState{}
		for _, d := range list.Data {
			for _, h := range d.Hooks {
				out[h.Key] = HookState{Hash: h.CurrentHash, Status: h.TrustStatus}
			}
		}
		return out, nil
	}
}
