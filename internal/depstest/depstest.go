// Package depstest checks what crw's packages are built from, for tests that keep the
// dependency rules of docs/architecture.md: a test kit, imported by tests alone.
package depstest

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Deps is what the package at importPath is built from (go list -deps), its tests left out.
// The test is skipped under -short, or where no go command is found.
func Deps(t testing.TB, importPath string) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", importPath).Output()
	require.NoError(t, err, importPath)
	list := strings.Fields(string(out))
	require.NotEmpty(t, list, importPath)
	return list
}

// Under reports whether dep is pkg or a package beneath it.
func Under(dep, pkg string) bool { return dep == pkg || strings.HasPrefix(dep, pkg+"/") }

// Forbid fails t for each package of rules (an import path and the import paths it must not be
// built from, nor anything beneath them) that is built from a forbidden one.
func Forbid(t testing.TB, rules map[string][]string) {
	t.Helper()
	for pkg, forbidden := range rules {
		for _, dep := range Deps(t, pkg) {
			for _, f := range forbidden {
				assert.False(t, Under(dep, f), "%s imports %s", pkg, dep)
			}
		}
	}
}
