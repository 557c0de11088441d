package engine_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCoreImportsNoConcreteBackendOrStore: the engine core knows backends only through
// engine/backend and stores only through store; the command line builds the concrete ones.
func TestCoreImportsNoConcreteBackendOrStore(t *testing.T) {
	t.Parallel()
	core := []string{"engine", "engine/runner", "engine/placer", "engine/offline", "engine/callstate", "engine/replay", "engine/shadow", "engine/inputs", "engine/result", "engine/backend", "store"}
	forbidden := []string{
		"github.com/crw-dev/crw/engine/backend/fake", "github.com/crw-dev/crw/engine/backend/appserver",
		"github.com/crw-dev/crw/internal/pulltest", "github.com/crw-dev/crw/engine/backend/codex",
		"github.com/crw-dev/crw/engine/backend/session",
		"github.com/crw-dev/crw/store/local", "github.com/crw-dev/crw/store/mem", "go.etcd.io/bbolt",
		"github.com/crw-dev/crw/cmd",
	}
	for _, pkg := range core {
		for _, dep := range deps(t, pkg) {
			for _, f := range forbidden {
				assert.False(t, dep == f || strings.HasPrefix(dep, f+"/"), "%s imports %s", pkg, dep)
			}
		}
	}
}

// TestNoBackendImportsAnother: each concrete backend is built from the contract and the shared
// packages beneath it (engine/backend/codex, engine/backend/bound), never from another backend.
func TestNoBackendImportsAnother(t *testing.T) {
	t.Parallel()
	backends := []string{"engine/backend/fake", "engine/backend/appserver", "engine/backend/session"}
	for _, pkg := range backends {
		for _, dep := range deps(t, pkg) {
			for _, other := range backends {
				if other == pkg {
					continue
				}
				f := "github.com/crw-dev/crw/" + other
				assert.False(t, dep == f || strings.HasPrefix(dep, f+"/"), "%s imports %s", pkg, dep)
			}
		}
	}
}

// TestTestKitsStayInTests: the test kits (internal/enginetest, internal/pulltest,
// internal/mockmodel) are imported by tests alone, never by what crw is built from.
func TestTestKitsStayInTests(t *testing.T) {
	t.Parallel()
	for _, dep := range deps(t, "cmd/crw") {
		for _, kit := range []string{"internal/enginetest", "internal/pulltest", "internal/mockmodel"} {
			assert.NotEqual(t, "github.com/crw-dev/crw/"+kit, dep, "crw is built with a test kit")
		}
	}
}

// deps is what crw's package pkg is built from (go list -deps), its tests left out.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", "github.com/crw-dev/crw/"+pkg).Output()
	require.NoError(t, err, pkg)
	list := strings.Fields(string(out))
	require.NotEmpty(t, list)
	return list
}
