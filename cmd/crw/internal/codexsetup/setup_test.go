package codexsetup_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/codexsetup"
	"github.com/crw-dev/crw/internal/mockmodel"
	"github.com/crw-dev/crw/journal"
)

const userConfig = `# my settings
model = "my-model"

[agents]
max_threads = 3

[agents.reviewer]
description = "my own reviewer"
config_file = "mine.toml"
`

const userHooks = `{"hooks": {"PreToolUse": [{"matcher": "shell", "hooks": [{"type": "command", "command": "/usr/bin/true", "timeout": 5}]}]}}`

// TestSetupWritesRolesAndATrustedHookOnTheRealCodex: into a CODEX_HOME with settings of the
// user's own, setup writes the roles the user does not define, the spawn hook beside the user's
// hooks, and the hook's trust with the hash the real Codex gives it; run again it writes
// nothing; a changed role table rewrites that role's file; --check tells what is missing.
func TestSetupWritesRolesAndATrustedHookOnTheRealCodex(t *testing.T) {
	codex := mockmodel.Codex(t)
	home := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(userConfig), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(home, "hooks.json"), []byte(userHooks), 0o600))
	ctx := context.Background()
	opts := codexsetup.Options{CodexHome: home, HookCommand: "/opt/crw/bin/crw --state /s codex hook",
		Roles: map[string]journal.Pair{"executor": {Model: "gpt-x", Effort: "high"}, "explorer": {Model: "gpt-y"}},
		Trust: codexsetup.CodexTrust(codex)}

	check, err := codexsetup.Setup(ctx, opts, true)
	require.NoError(t, err)
	assert.NotEmpty(t, check.Missing, "a fresh CODEX_HOME lacks everything")

	rep, err := codexsetup.Setup(ctx, opts, false)
	require.NoError(t, err)
	assert.Equal(t, "trusted", rep.Hook.Status, "%+v", rep.Hook)
	assert.Empty(t, rep.Missing)
	statuses := map[string]string{}
	for _, r := range rep.Roles {
		statuses[r.Role] = r.Status
	}
	assert.Equal(t, map[string]string{"architect": "written", "executor": "written", "executor-t1": "written", "reviewer": "user_defined", "explorer": "written", "critic": "written"}, statuses)

	config, err := os.ReadFile(filepath.Join(home, "config.toml"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(config), userConfig), "the user's settings stay as they were")
	var parsed struct {
		Model  string
		Agents map[string]any
	}
	_, err = toml.Decode(string(config), &parsed)
	require.NoError(t, err, string(config))
	assert.Equal(t, "my-model", parsed.Model)
	assert.Equal(t, int64(3), parsed.Agents["max_threads"])
	assert.Equal(t, "my own reviewer", parsed.Agents["reviewer"].(map[string]any)["description"])
	assert.Equal(t, "crw/agents/executor.toml", parsed.Agents["executor"].(map[string]any)["config_file"])
	fi, err := os.Stat(filepath.Join(home, "config.toml"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), "the user's file keeps its mode")

	var role struct {
		Model        string `toml:"model"`
		Effort       string `toml:"model_reasoning_effort"`
		Instructions string `toml:"developer_instructions"`
	}
	_, err = toml.DecodeFile(filepath.Join(home, "crw", "agents", "executor.toml"), &role)
	require.NoError(t, err)
	assert.Equal(t, "gpt-x", role.Model)
	assert.Equal(t, "high", role.Effort)
	assert.Contains(t, role.Instructions, "You are an executor of a crw workflow.")
	role.Model, role.Effort = "", ""
	_, err = toml.DecodeFile(filepath.Join(home, "crw", "agents", "architect.toml"), &role)
	require.NoError(t, err)
	assert.Empty(t, role.Model, "an undecided role's file pins no model")

	var hooks struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	data, err := os.ReadFile(filepath.Join(home, "hooks.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &hooks))
	require.Len(t, hooks.Hooks["PreToolUse"], 2, "the user's hook and crw's")
	assert.Equal(t, "/usr/bin/true", hooks.Hooks["PreToolUse"][0].Hooks[0].Command)
	assert.Equal(t, "spawn_agent", hooks.Hooks["PreToolUse"][1].Matcher)
	assert.Equal(t, opts.HookCommand, hooks.Hooks["PreToolUse"][1].Hooks[0].Command)

	again, err := codexsetup.Setup(ctx, opts, false)
	require.NoError(t, err)
	assert.Empty(t, again.Written, "a second setup writes nothing")
	assert.Equal(t, "trusted", again.Hook.Status)
	check, err = codexsetup.Setup(ctx, opts, true)
	require.NoError(t, err)
	assert.Empty(t, check.Missing)

	opts.Roles["executor"] = journal.Pair{Model: "gpt-z"}
	check, err = codexsetup.Setup(ctx, opts, true)
	require.NoError(t, err)
	assert.Equal(t, []string{"role executor: out_of_date"}, check.Missing)
	rep, err = codexsetup.Setup(ctx, opts, false)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(home, "crw", "agents", "executor.toml")}, rep.Written)

	// A hook command that changes (crw moved) is trusted again under its new hash.
	opts.HookCommand = "/usr/local/bin/crw --state /s codex hook"
	rep, err = codexsetup.Setup(ctx, opts, false)
	require.NoError(t, err)
	assert.Equal(t, "trusted", rep.Hook.Status)
	data, _ = os.ReadFile(filepath.Join(home, "hooks.json"))
	assert.Equal(t, 1, strings.Count(string(data), "codex hook"), "crw's group is replaced, not added again")
}

func TestSetupWithoutCodexLeavesTheHookUntrusted(t *testing.T) {
	home := t.TempDir()
	rep, err := codexsetup.Setup(context.Background(), codexsetup.Options{CodexHome: home, HookCommand: "/crw codex hook"}, false)
	require.NoError(t, err)
	assert.Equal(t, "untrusted", rep.Hook.Status)
	assert.Contains(t, rep.Missing, "the spawn hook's trust")
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte("not = [toml"), 0o600))
	_, err = codexsetup.Setup(context.Background(), codexsetup.Options{CodexHome: home, HookCommand: "/crw codex hook"}, false)
	assert.ErrorContains(t, err, "config.toml: not TOML")
}

// TestSetupRefusesWhatItCannotAddToAndWritesNothing: a config.toml whose form crw's tables
// would clash with, a start marker without its end, a hooks.json that is no object, or a link
// where setup writes: an ErrUserFile naming the file, and nothing of the CODEX_HOME changes.
func TestSetupRefusesWhatItCannotAddToAndWritesNothing(t *testing.T) {
	for _, c := range []struct {
		name, config, hooks, want string
	}{
		{"agents as an inline table", "agents = {max_threads = 4}\n", "", "crw's roles and trust cannot be added to your settings"},
		{"agents not a table", "agents = 5\n", "", "agents is not a table"},
		{"hooks.state inline", "[hooks]\nstate = {}\n", "", "cannot be added to your settings"},
		{"a start marker without its end", "# >>> crw codex setup: written by crw; edit the roles with crw codex setup --roles >>>\nmodel = \"mine\"\n", "", "start marker without its end marker"},
		{"hooks.json a list", "", "[]", "hooks.json: not a JSON object"},
		{"not TOML", "model = \n", "", "not TOML"},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(c.config), 0o600))
			if c.hooks != "" {
				require.NoError(t, os.WriteFile(filepath.Join(home, "hooks.json"), []byte(c.hooks), 0o600))
			}
			_, err := codexsetup.Setup(context.Background(), codexsetup.Options{CodexHome: home, HookCommand: "/crw codex hook"}, false)
			require.ErrorIs(t, err, codexsetup.ErrUserFile)
			assert.ErrorContains(t, err, c.want)
			config, _ := os.ReadFile(filepath.Join(home, "config.toml"))
			assert.Equal(t, c.config, string(config), "config.toml as it was")
			assert.NoDirExists(t, filepath.Join(home, "crw"), "no role file was written")
		})
	}
	t.Run("a hooks.json of null is no hooks yet", func(t *testing.T) {
		home := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(home, "hooks.json"), []byte("null"), 0o600))
		rep, err := codexsetup.Setup(context.Background(), codexsetup.Options{CodexHome: home, HookCommand: "/crw codex hook"}, false)
		require.NoError(t, err)
		assert.Contains(t, rep.Written, filepath.Join(home, "hooks.json"))
	})
	t.Run("a link where setup writes", func(t *testing.T) {
		home, elsewhere := t.TempDir(), t.TempDir()
		target := filepath.Join(elsewhere, "config.toml")
		require.NoError(t, os.WriteFile(target, []byte("model = \"mine\"\n"), 0o600))
		require.NoError(t, os.Symlink(target, filepath.Join(home, "config.toml")))
		_, err := codexsetup.Setup(context.Background(), codexsetup.Options{CodexHome: home, HookCommand: "/crw codex hook"}, false)
		require.ErrorIs(t, err, codexsetup.ErrUserFile)
		assert.ErrorContains(t, err, "is a link")
		data, _ := os.ReadFile(target)
		assert.Equal(t, "model = \"mine\"\n", string(data))
		fi, err := os.Lstat(filepath.Join(home, "config.toml"))
		require.NoError(t, err)
		assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the link stays a link")
	})
}
