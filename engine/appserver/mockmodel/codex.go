package mockmodel

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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
