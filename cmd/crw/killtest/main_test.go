package killtest

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/crw-dev/crw/cmd/crw/internal/backends"
	"github.com/crw-dev/crw/cmd/crw/internal/cli"
)

// TestMain makes the test binary double as crw, so the tiers run the real command in processes
// they can kill.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"crw": func() { os.Exit(cli.Main(backends.Registry())) },
	})
}
