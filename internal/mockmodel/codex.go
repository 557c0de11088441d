package mockmodel

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Codex finds the codex binary tests run against: $CRW_CODEX, else the one .ci/install-codex.sh
// installs in the checkout. Without one the test is skipped, unless CI is set: there it must run.
func Codex(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CRW_CODEX"); p != "" {
		found, err := exec.LookPath(p)
		if err != nil {
			t.Fatalf("CRW_CODEX: %v", err)
		}
		return found
	}
	if root := repoRoot(); root != "" {
		local := filepath.Join(root, ".tools", "codex", "node_modules", ".bin", "codex")
		if _, err := os.Stat(local); err == nil {
			return local
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("codex is not installed and CI is set: run .ci/install-codex.sh or set CRW_CODEX")
	}
	t.Skip("codex is not installed: skipping the tests against the real app server (run .ci/install-codex.sh or set CRW_CODEX; CI runs them)")
	return ""
}

// repoRoot is the folder of the go.mod above the working directory.
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// StartOwnerServer runs `codex app-server --listen unix://sock` on home, as a user's Codex whose
// app server crw reads, and waits until it listens. The server is killed when the test ends.
func StartOwnerServer(t testing.TB, codex, home, sock string) {
	cmd := exec.Command(codex, "app-server", "--listen", "unix://"+sock)
	cmd.Env = append(os.Environ(), "CODEX_HOME="+home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	log, err := os.Create(filepath.Join(t.TempDir(), "owner-app-server.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the npm launcher and codex
		<-exited
		log.Close()
		// sock links to a socket and a lock file Codex made in /tmp/codex-daemon-<uid>: its
		// own, named by a hash of the path, and left behind by a killed server.
		if target, err := filepath.EvalSymlinks(sock); err == nil && strings.HasPrefix(filepath.Base(filepath.Dir(target)), "codex-daemon-") {
			os.Remove(target)
			os.Remove(target + ".lock")
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			return
		}
		select {
		case <-exited:
			out, _ := os.ReadFile(log.Name())
			t.Fatalf("the owner's app server exited: %s", out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the owner's app server did not listen within 10 s")
		}
	}
}

// WriteCatalog makes the models of a CODEX_HOME (the mock's Model and slugs) a model catalogue
// (model_catalog_json), so spawn_agent takes them as model and reasoning_effort overrides:
// Codex refuses an override outside its catalogue. Each entry is a copy of a bundled model's
// (codex debug models) under the slug, without an upgrade or the search tool, which would hide
// the multi_agent_v1 tools behind tool_search.
func WriteCatalog(t testing.TB, codex, home string, slugs ...string) {
	t.Helper()
	cmd := exec.Command(codex, "debug", "models")
	cmd.Env = append(os.Environ(), "CODEX_HOME="+home)
	out, err := cmd.Output()
	require.NoError(t, err, "codex debug models")
	var bundled struct {
		Models []map[string]any `json:"models"`
	}
	require.NoError(t, json.Unmarshal(out, &bundled))
	// A model of the classic tool mode, with the multi_agent_v1 tools: gpt-5.5 in 0.169.0;
	// the newer ones run code mode and multi-agent v2.
	var base map[string]any
	for _, m := range bundled.Models {
		if levels, _ := m["supported_reasoning_levels"].([]any); len(levels) >= 3 && m["tool_mode"] == nil && m["multi_agent_version"] == nil {
			base = m
			break
		}
	}
	require.NotNil(t, base, "no bundled model of the classic tool mode to copy")
	var models []map[string]any
	for i, slug := range append([]string{Model}, slugs...) {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		m["slug"], m["display_name"], m["description"] = slug, slug, "mock model "+slug
		m["upgrade"], m["supports_search_tool"], m["priority"] = nil, false, i+1
		models = append(models, m)
	}
	catalog := filepath.Join(home, "catalog.json")
	data, err := json.Marshal(map[string]any{"models": models})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(catalog, data, 0o644))
	config := filepath.Join(home, "config.toml")
	old, err := os.ReadFile(config)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf("model_catalog_json = %q\n", catalog)+string(old)), 0o644))
}
