package journal_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeps keeps the journal a leaf every store and the engine can share: its
// rows and traces need the standard library, a JSON decoder and errs (a run's
// error carries its diagnostic), nothing else (no bbolt: that is one store's).
func TestDeps(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "github.com/crw-dev/crw/journal").Output()
	require.NoError(t, err)
	allowed := []string{"github.com/crw-dev/crw/journal", "github.com/crw-dev/crw/errs", "github.com/goccy/go-json"}
	for _, dep := range strings.Fields(string(out)) {
		ok := false
		for _, a := range allowed {
			ok = ok || dep == a || strings.HasPrefix(dep, a+"/") || (strings.HasSuffix(a, "/") && strings.HasPrefix(dep, a))
		}
		assert.True(t, ok, "journal depends on %s", dep)
	}
}
